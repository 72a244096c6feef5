#!/usr/bin/python3
"""pytorch_gpt.py — the PyTorch baseline of `make bench-trainer`, measured in the same run.

The same byte-level GPT as trainer/ (pre-LayerNorm, causal attention, tanh-GELU MLP, tied
embedding, AdamW), written as idiomatic PyTorch modules, trained on random tokens on the CPU with
T = 256, B = 16. Prints one line per model:
    BENCH trainer.pytorch_tokens_per_s model=<name> threads=<t> <tokens/s>
Needs Debian's python3-torch; prints "SKIP pytorch baseline: ..." and exits 0 without it.
"""
import sys
import time

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:  # torch is optional: the bench then uses BENCHMARKS.md's numbers
    print(f"SKIP pytorch baseline: {e}")
    sys.exit(0)


class Block(nn.Module):
    def __init__(self, c, nh):
        super().__init__()
        self.nh = nh
        self.ln1, self.ln2 = nn.LayerNorm(c), nn.LayerNorm(c)
        self.qkv, self.proj = nn.Linear(c, 3 * c), nn.Linear(c, c)
        self.fc, self.fcproj = nn.Linear(c, 4 * c), nn.Linear(4 * c, c)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=-1)
        q, k, v = (z.view(b, t, self.nh, c // self.nh).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / (c // self.nh) ** 0.5
        mask = torch.ones(t, t, dtype=torch.bool).tril()
        att = F.softmax(att.masked_fill(~mask, float("-inf")), dim=-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, c))
        return x + self.fcproj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, c, layers, nh, t):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(256, c), nn.Embedding(t, c)
        self.blocks = nn.ModuleList(Block(c, nh) for _ in range(layers))
        self.lnf = nn.LayerNorm(c)

    def forward(self, idx):
        h = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for blk in self.blocks:
            h = blk(h)
        return self.lnf(h) @ self.wte.weight.t()


def main():
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    T, B = 256, 16
    for name, c, layers in (("d128l4", 128, 4), ("d256l6", 256, 6), ("d384l6", 384, 6)):
        model = GPT(c, layers, max(1, c // 64), T)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        x = torch.randint(0, 256, (B, T))
        y = torch.randint(0, 256, (B, T))
        best = float("inf")
        for s in range(6):  # step 0 warms up; the fastest later step counts, as in bench_trainer
            t0 = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(x).view(-1, 256), y.view(-1))
            loss.backward()
            opt.step()
            if s > 0:
                best = min(best, time.perf_counter() - t0)
        tps = B * T / best
        print(f"BENCH trainer.pytorch_tokens_per_s model={name} threads={threads} {tps:.0f}",
              flush=True)


if __name__ == "__main__":
    main()
