#!/usr/bin/python3
"""make_fixture.py — writes tests/data/trainer/gpt_tiny.bin, the PyTorch reference state that
tests/trainer/test_trainer_fixture.c compares the C trainer with (llm.c's test_gpt2 method).

Run once with Debian's python3-torch (1.13, CPU): /usr/bin/python3 tests/trainer/make_fixture.py
The model is written out here in plain torch ops, in the C trainer's parameter layout (per-layer
tensors stacked along a leading L axis), so that nothing but the maths is shared with the C code:
pre-LayerNorm blocks, causal attention, tanh-GELU MLP, tied embedding, torch.optim.AdamW with
decay on matrices/embeddings only, clip_grad_norm_. CI does not need torch: the output is committed.

File layout (little-endian): int32[8] magic 0x53544658, version 1, L, C, NH, T, B, steps;
float32[8] lr, beta1, beta2, eps, weight_decay, clip, 0, 0; params (P); inputs int32 (B*T);
targets int32 (B*T); logits (B*T*256); loss (1); grads (P); losses (steps).
"""
import struct
import sys

import torch
import torch.nn.functional as F

L, C, NH, T, B, STEPS, V = 2, 32, 4, 16, 2, 10, 256
LR, BETA1, BETA2, EPS, WD, CLIP = 1e-2, 0.9, 0.95, 1e-8, 0.1, 1.0

torch.manual_seed(0)
shapes = [("wte", (V, C)), ("wpe", (T, C)), ("ln1w", (L, C)), ("ln1b", (L, C)),
          ("qkvw", (L, 3 * C, C)), ("qkvb", (L, 3 * C)), ("attprojw", (L, C, C)),
          ("attprojb", (L, C)), ("ln2w", (L, C)), ("ln2b", (L, C)), ("fcw", (L, 4 * C, C)),
          ("fcb", (L, 4 * C)), ("fcprojw", (L, C, 4 * C)), ("fcprojb", (L, C)), ("lnfw", (C,)),
          ("lnfb", (C,))]
decay = {"wte", "wpe", "qkvw", "attprojw", "fcw", "fcprojw"}
P = {}
for name, shape in shapes:
    if name in ("ln1w", "ln2w", "lnfw"):
        t = 1.0 + 0.1 * torch.randn(shape)
    else:
        t = 0.1 * torch.randn(shape)
    P[name] = t.float().requires_grad_(True)

text = b"In the beginning God created the heaven and the earth. And the earth was without form"
tok = torch.tensor(list(text[: B * T + 1]), dtype=torch.long)
x = torch.stack([tok[b * T: b * T + T] for b in range(B)])
y = torch.stack([tok[b * T + 1: b * T + T + 1] for b in range(B)])
mask = torch.tril(torch.ones(T, T, dtype=torch.bool))


def forward(x):
    h = P["wte"][x] + P["wpe"][:T]
    hs = C // NH
    for l in range(L):
        a = F.layer_norm(h, (C,), P["ln1w"][l], P["ln1b"][l], 1e-5)
        qkv = F.linear(a, P["qkvw"][l], P["qkvb"][l])
        q, k, v = qkv.split(C, dim=-1)
        q = q.view(B, T, NH, hs).transpose(1, 2)
        k = k.view(B, T, NH, hs).transpose(1, 2)
        v = v.view(B, T, NH, hs).transpose(1, 2)
        s = (q @ k.transpose(-2, -1)) / (hs ** 0.5)
        s = s.masked_fill(~mask, float("-inf"))
        o = (F.softmax(s, dim=-1) @ v).transpose(1, 2).reshape(B, T, C)
        h = h + F.linear(o, P["attprojw"][l], P["attprojb"][l])
        a = F.layer_norm(h, (C,), P["ln2w"][l], P["ln2b"][l], 1e-5)
        m = F.gelu(F.linear(a, P["fcw"][l], P["fcb"][l]), approximate="tanh")
        h = h + F.linear(m, P["fcprojw"][l], P["fcprojb"][l])
    h = F.layer_norm(h, (C,), P["lnfw"], P["lnfb"], 1e-5)
    return h @ P["wte"].t()


params0 = torch.cat([P[n].detach().flatten() for n, _ in shapes]).clone()
opt = torch.optim.AdamW(
    [{"params": [P[n] for n, _ in shapes if n in decay], "weight_decay": WD},
     {"params": [P[n] for n, _ in shapes if n not in decay], "weight_decay": 0.0}],
    lr=LR, betas=(BETA1, BETA2), eps=EPS)
losses = []
for step in range(STEPS):
    opt.zero_grad()
    logits = forward(x)
    loss = F.cross_entropy(logits.view(-1, V), y.view(-1))
    loss.backward()
    if step == 0:
        logits0 = logits.detach().flatten().clone()
        loss0 = loss.item()
        grads0 = torch.cat([P[n].grad.flatten() for n, _ in shapes]).clone()
    norm = torch.nn.utils.clip_grad_norm_([P[n] for n, _ in shapes], CLIP)
    opt.step()
    losses.append(loss.item())
    print(f"step {step}: loss {loss.item():.6f} grad norm {norm.item():.4f}", file=sys.stderr)

out = sys.argv[1] if len(sys.argv) > 1 else "tests/data/trainer/gpt_tiny.bin"
with open(out, "wb") as f:
    f.write(struct.pack("<8i", 0x53544658, 1, L, C, NH, T, B, STEPS))
    f.write(struct.pack("<8f", LR, BETA1, BETA2, EPS, WD, CLIP, 0, 0))
    f.write(params0.numpy().astype("<f4").tobytes())
    f.write(x.flatten().numpy().astype("<i4").tobytes())
    f.write(y.flatten().numpy().astype("<i4").tobytes())
    f.write(logits0.numpy().astype("<f4").tobytes())
    f.write(struct.pack("<f", loss0))
    f.write(grads0.numpy().astype("<f4").tobytes())
    f.write(struct.pack(f"<{STEPS}f", *losses))
print(f"wrote {out}: {params0.numel()} parameters", file=sys.stderr)
