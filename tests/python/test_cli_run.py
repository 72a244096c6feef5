"""test_cli_run.py -- `scaletune run` as a user meets it (docs/cli/run.md): a trainer that kills
itself once after a checkpoint is restarted from it (summary: 1 restart, the steps done again);
a diverged run exits 3 without a restart; a file of more than one run is refused; --expect with
an interval the final loss misses stores an alert that `sweep status` (text and --json) shows;
running the same file again continues the stored sweep; a command without {_resume} is warned
about; the reference trainer killed 10 times at random, its node failing a health check twice
(stopped, then quarantined; the run goes on on another node), ends with the uninterrupted run's
final loss to the bit, the lost time reported."""

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import unittest

import stutil

# A trainer of 10 steps: checkpoints after each step ({_checkpoint}: the step), and on its
# first attempt kills itself (SIGKILL) after step 6; {_resume} says where to start.
TRAINER = r"""
import json, os, signal, sys
ck, resume, mode = sys.argv[1], sys.argv[2], sys.argv[3]
start = int(open(resume).read()) if resume else 0
def emit(**kw):
    print(json.dumps(kw), flush=True)
emit(event="config", steps=10)
for s in range(start + 1, 11):
    loss = 2 + 1.0 / s
    if mode == "diverge" and s == 3:
        emit(event="diverged", step=s, reason="loss is NaN"); sys.exit(3)
    emit(event="step", step=s, loss=loss, tokens_per_s=1000)
    with open(ck + ".tmp", "w") as f:
        f.write(str(s))
    os.replace(ck + ".tmp", ck)
    emit(event="checkpoint", step=s)
    if s == 6 and os.environ["SCALETUNE_ATTEMPT"] == "1" and mode == "crash":
        if os.environ.get("MARK"):
            open(os.environ["MARK"], "w").close()  # what the node's health check will see
        os.kill(os.getpid(), signal.SIGKILL)
emit(event="eval", step=10, val_loss=2.1)
emit(event="final", val_loss=2.1, flops=1e9, params=1000, tokens=20000)
"""

RUN = """name: %(name)s
command: ["python3", "%(trainer)s", "{_checkpoint}", "%(resume)s", "{mode}"]
objective: {metric: val_loss}
cost: {metric: flops}
parameters:
  mode: {value: %(mode)s}
budget: {runs: %(runs)d}
retries: {infrastructure: 3, backoff_seconds: 0.01}
%(extra)s"""

# a health check failing while the file $1.NODE exists (that node's "fault"), saying so
CHECK = """#!/bin/sh
if [ -e "$1.$SCALETUNE_NODE" ]; then echo "fault marker on $SCALETUNE_NODE"; exit 1; fi
echo healthy
"""


def cli(*args, check=False):
    return stutil.run([stutil.CLI] + list(args), check=check)


@unittest.skipUnless(os.path.exists(stutil.CLI), "no scaletune CLI in the build directory")
class TestCliRun(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.d = self.tmp.name
        self.db = os.path.join(self.d, "s.db")
        self.trainer = os.path.join(self.d, "trainer.py")
        with open(self.trainer, "w") as f:
            f.write(TRAINER)

    def tearDown(self):
        self.tmp.cleanup()

    def sweep(self, name, mode, runs=1, resume="{_resume}", extra=""):
        p = os.path.join(self.d, name + ".yaml")
        with open(p, "w") as f:
            f.write(RUN % dict(name=name, trainer=self.trainer, mode=mode, runs=runs, resume=resume,
                               extra=extra))
        return p

    def health_sweep(self, name, mode):
        check = os.path.join(self.d, "check.sh")
        with open(check, "w") as f:
            f.write(CHECK)
        os.chmod(check, 0o755)
        self.mark = os.path.join(self.d, "fault")
        return self.sweep(name, mode, extra="large_run:\n  health_checks: ['%s %s']\n" % (
            check, self.mark))

    def test_restart_from_checkpoint(self):
        f = self.sweep("big", "crash")
        r = cli("run", f, "--db", self.db, "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("warning", r.stderr)
        s = json.loads(r.stdout)
        self.assertEqual((s["status"], s["restarts"], s["attempts"]), ("succeeded", 1, 2))
        # killed after the checkpoint of step 6: the second attempt starts at step 7
        self.assertEqual((s["lost_steps"], s["last_step"], s["objective"]), (0, 10, 2.1))
        self.assertGreater(s["lost_seconds"], 0)
        log = os.path.join(self.db + ".runs", "big", "run-1", "attempt-2", "stdout.log")
        with open(log) as lf:
            recs = [json.loads(l) for l in lf if l.startswith("{")]
        steps = [x["step"] for x in recs if x["event"] == "step"]
        self.assertEqual(steps, [7, 8, 9, 10])
        # the same file again: the stored sweep is continued (it has ended: the summary only)
        r = cli("run", f, "--db", self.db)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("continuing it", r.stderr)
        self.assertIn("restarts   1 (2 attempts)", r.stdout)

    def test_diverged_stops(self):
        r = cli("run", self.sweep("div", "diverge"), "--db", self.db, "--json")
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("the large run failed: diverged", r.stderr)
        s = json.loads(r.stdout)
        self.assertEqual((s["status"], s["failure"], s["restarts"]), ("failed", "diverged", 0))

    def test_refuses_many_runs(self):
        r = cli("run", self.sweep("many", "ok", runs=2), "--db", self.db)
        self.assertEqual(r.returncode, 1)
        self.assertIn("budget is 2 runs", r.stderr)
        self.assertFalse(os.path.exists(self.db))

    def test_expect_interval_alert(self):
        xp = os.path.join(self.d, "xp.json")
        with open(xp, "w") as f:
            json.dump({"predicted": {"objective": 1.5, "lo": 1.4, "hi": 1.6, "level": 0.9}}, f)
        r = cli("run", self.sweep("miss", "ok", resume=""), "--db", self.db, "--expect", xp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("warning: the command has no {_resume}", r.stderr)
        self.assertIn("ALERT final_outside: final val_loss 2.1 is outside the predicted [1.4, 1.6]",
                      r.stderr)
        st = cli("sweep", "status", "--db", self.db)
        self.assertIn("alerts     1", st.stdout)
        self.assertIn("final_outside", st.stdout)
        js = json.loads(cli("sweep", "status", "--db", self.db, "--json").stdout)
        self.assertEqual([a["kind"] for a in js["alerts"]], ["final_outside"])
        # an interval given directly, containing the final loss: no new alert
        r = cli("run", self.sweep("hit", "ok"), "--db", self.db, "--interval", "2.0,2.2", "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout)["alerts"], 0)

    def test_health_before_start_quarantine(self):
        f = self.health_sweep("h1", "ok")
        open(self.mark + ".node-a", "w").close()
        r = cli("run", f, "--db", self.db, "--node", "node-a")
        self.assertEqual(r.returncode, 1)
        self.assertIn("health check before the start on node-a failed", r.stderr)
        self.assertIn("fault marker", r.stderr)
        self.assertIn("1 failure on this node", r.stderr)
        r = cli("run", f, "--db", self.db, "--node", "node-a")
        self.assertEqual(r.returncode, 1)
        self.assertIn("the node is quarantined", r.stderr)
        r = cli("run", f, "--db", self.db, "--node", "node-a")
        self.assertEqual(r.returncode, 1)
        self.assertIn("node node-a is quarantined for sweep 'h1': 2 failed health checks", r.stderr)
        st = cli("sweep", "status", "--db", self.db)
        self.assertIn("quarantined 1 node", st.stdout)
        js = json.loads(cli("sweep", "status", "--db", self.db, "--json").stdout)
        self.assertEqual([q["node"] for q in js["quarantined"]], ["node-a"])
        # another node, healthy: the run (never started so far) runs there
        r = cli("run", f, "--db", self.db, "--node", "node-b", "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout)["attempts"], 1)

    def test_health_after_failure(self):
        # the trainer dies after step 6 and leaves the fault behind: the check after the failure
        # stops the run; the node fails again at the next start (quarantined); on another node
        # the run resumes from its checkpoint and finishes
        f = self.health_sweep("h2", "crash")
        env = stutil.tool_env(MARK=self.mark + ".node-a")
        r = stutil.run([stutil.CLI, "run", f, "--db", self.db, "--node", "node-a"], env=env,
                       check=False)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("health check after a failure on node-a failed", r.stderr)
        self.assertIn("stopped", r.stderr)
        r = cli("run", f, "--db", self.db, "--node", "node-a")
        self.assertEqual(r.returncode, 1)
        self.assertIn("the node is quarantined", r.stderr)
        r = cli("run", f, "--db", self.db, "--node", "node-b", "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        s = json.loads(r.stdout)
        self.assertEqual((s["status"], s["objective"], s["lost_steps"], s["last_step"]),
                         ("succeeded", 2.1, 0, 10))
        self.assertGreaterEqual(s["restarts"], 1)

    @unittest.skipUnless(os.path.exists(os.path.join(stutil.BUILD, "scaletune-train")),
                         "no scaletune-train in the build directory")
    def test_sdc_makes_the_node_suspect(self):
        # the reference trainer with a weight bit flipped after step 23, replaying every 10
        # steps: the alert, the node recorded as suspect, and the clean run's final loss
        data = os.path.join(stutil.ROOT, "examples", "data", "genesis.txt")
        flags = ["--d-model", "32", "--n-layer", "1", "--seq-len", "32", "--batch", "4",
                 "--tokens", "1e4", "--threads", "1", "--data", data, "--val-data", ""]
        train = os.path.join(stutil.BUILD, "scaletune-train")
        clean = stutil.run([train] + flags).stdout.strip().splitlines()[-1]
        p = os.path.join(self.d, "sdc.yaml")
        with open(p, "w") as f:
            f.write("name: sdc\ncommand: %s\nenv: {SCALETUNE_TRAIN_FLIP: '23:100:22'}\n"
                    "objective: {metric: val_loss}\ncost: {metric: flops}\n"
                    "parameters:\n  p: {value: 1}\nbudget: {runs: 1}\n"
                    % json.dumps([train] + flags + ["--sdc-every", "10"]))
        r = cli("run", p, "--db", self.db, "--node", "node-a", "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("ALERT sdc at step 30: silent data corruption", r.stderr)
        self.assertIn("node node-a is suspect (1 failure)", r.stderr)
        self.assertEqual(json.loads(r.stdout)["objective"], json.loads(clean)["val_loss"])

    @unittest.skipUnless(os.path.exists(os.path.join(stutil.BUILD, "scaletune-train")),
                         "no scaletune-train in the build directory")
    def test_two_sdc_quarantine_the_node(self):
        # the same fault on two passes of one window: two sdc records at the same step (the
        # trainer rolls back twice), each a failure of the node, so it is quarantined at the
        # second (docs/large-run.md), both in the same poll of the watch as a rule
        data = os.path.join(stutil.ROOT, "examples", "data", "genesis.txt")
        flags = ["--d-model", "32", "--n-layer", "1", "--seq-len", "32", "--batch", "4",
                 "--tokens", "1e4", "--threads", "1", "--data", data, "--val-data", ""]
        train = os.path.join(stutil.BUILD, "scaletune-train")
        p = os.path.join(self.d, "sdc2.yaml")
        with open(p, "w") as f:
            f.write("name: sdc2\ncommand: %s\nenv: {SCALETUNE_TRAIN_FLIP: '23:100:22:2'}\n"
                    "objective: {metric: val_loss}\ncost: {metric: flops}\n"
                    "parameters:\n  p: {value: 1}\nbudget: {runs: 1}\n"
                    % json.dumps([train] + flags + ["--sdc-every", "10"]))
        r = cli("run", p, "--db", self.db, "--node", "node-a")
        self.assertIn(r.returncode, (0, 1), r.stderr)
        self.assertEqual(r.stderr.count("ALERT sdc at step 30: silent data corruption"), 2,
                         r.stderr)
        self.assertIn("node node-a is suspect (1 failure)", r.stderr)
        self.assertIn("node node-a is suspect (2 failures): quarantined", r.stderr)
        js = json.loads(cli("sweep", "status", "--db", self.db, "--json").stdout)
        self.assertEqual([q["node"] for q in js["quarantined"]], ["node-a"])

    def kill_attempts(self, argv, log, rng, kills, mark_at=None):
        """Runs the controller `argv` to its exit, SIGKILLing the trainer of each new attempt
        after a seeded random 3-12 of its step records (counted, not timed: with a checkpoint
        every 5 steps, some attempts end before their first checkpoint and none gets much past
        its second, so all the kills land before the run can finish), `kills` times; before
        kill number `mark_at` (1-based) node-a's fault marker is made, so the check after that
        failure fails. Returns the controller's exit status, stdout, stderr and the kills made."""
        out, err = os.path.join(self.d, "ctl.out"), os.path.join(self.d, "ctl.err")
        with open(out, "w") as fo, open(err, "w") as fe:
            proc = subprocess.Popen(argv, env=stutil.tool_env(), cwd=stutil.ROOT, stdout=fo,
                                    stderr=fe)
        done, made, deadline = set(), 0, time.time() + 120
        target = after = None
        try:
            while proc.poll() is None and time.time() < deadline:
                time.sleep(0.002)
                if made == kills:
                    continue
                if target is None:  # the newest live attempt not killed yet
                    n = 1
                    while os.path.isdir(os.path.join(log, "attempt-%d" % n)):
                        n += 1
                    a = os.path.join(log, "attempt-%d" % (n - 1))
                    if n == 1 or a in done or os.path.exists(os.path.join(a, "exit")):
                        continue
                    try:
                        with open(os.path.join(a, "pid")) as f:
                            pid = int(f.read().split()[1])  # supervisor, trainer
                    except (OSError, IndexError, ValueError):
                        continue
                    target, after = (a, pid), rng.randint(3, 12)
                a, pid = target
                steps = 0
                for name in ("metrics.jsonl", "stdout.log"):
                    try:
                        with open(os.path.join(a, name)) as f:
                            t = f.read().replace('"event": "step"', '"event":"step"')
                        steps = max(steps, t.count('"event":"step"'))
                    except OSError:
                        pass
                if os.path.exists(os.path.join(a, "exit")):
                    target = None  # ended before the kill (e.g. the run finished)
                    done.add(a)
                elif steps >= after:
                    if made + 1 == mark_at:
                        open(self.mark + ".node-a", "w").close()
                    os.kill(pid, signal.SIGKILL)
                    made += 1
                    done.add(a)
                    target = None
            proc.wait(timeout=max(1, deadline - time.time()))
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        with open(out) as fo, open(err) as fe:
            return proc.returncode, fo.read(), fe.read(), made

    @unittest.skipUnless(os.path.exists(os.path.join(stutil.BUILD, "scaletune-train")),
                         "no scaletune-train in the build directory")
    def test_killed_ten_times_same_loss(self):
        # The reference trainer (CPU, one thread, 391 steps, a checkpoint every 5) killed with
        # SIGKILL 10 times at seeded random steps; node-a fails the check after its 4th failure
        # (the run stops), is "repaired" (runs again there: the check before the start passes),
        # fails again after the 7th (2 failures: quarantined, the run stops), and the run goes on
        # on node-b, killed 3 more times, to its end: the final val_loss is the uninterrupted
        # run's (the same file, another store) as printed (%.9g of a float: the float itself),
        # and the lost time is reported. docs/large-run.md, "Determinism".
        data = os.path.join(stutil.ROOT, "examples", "data", "genesis.txt")
        train = os.path.join(stutil.BUILD, "scaletune-train")
        cmd = [train, "--d-model", "32", "--n-layer", "1", "--seq-len", "32", "--batch", "4",
               "--tokens", "5e4", "--threads", "1", "--seed", "7", "--data", data,
               "--val-data", "", "--checkpoint", "{_checkpoint}", "--checkpoint-every", "5",
               "--resume", "{_resume}"]
        check = os.path.join(self.d, "check.sh")
        with open(check, "w") as f:
            f.write(CHECK)
        os.chmod(check, 0o755)
        self.mark = os.path.join(self.d, "fault")
        p = os.path.join(self.d, "kill10.yaml")
        with open(p, "w") as f:
            f.write("name: kill10\ncommand: %s\nobjective: {metric: val_loss}\n"
                    "cost: {metric: flops}\nparameters:\n  p: {value: 1}\nbudget: {runs: 1}\n"
                    "retries: {infrastructure: 20, backoff_seconds: 0.01, "
                    "backoff_max_seconds: 0.05}\n"
                    "large_run:\n  health_checks: ['%s %s']\n  quarantine_after: 2\n"
                    % (json.dumps(cmd), check, self.mark))

        def final_val_loss(log):  # the final record's val_loss as the trainer printed it
            n = 1
            while os.path.isdir(os.path.join(log, "attempt-%d" % (n + 1))):
                n += 1
            with open(os.path.join(log, "attempt-%d" % n, "metrics.jsonl")) as f:
                fin = [l for l in f if l.startswith('{"event":"final"')]
            self.assertEqual(len(fin), 1, log)
            return fin[0].split('"val_loss":')[1].split(",")[0]

        # the uninterrupted run
        ref_db = os.path.join(self.d, "ref.db")
        r = cli("run", p, "--db", ref_db, "--node", "node-r", "--json", "--quiet")
        self.assertEqual(r.returncode, 0, r.stderr)
        ref = json.loads(r.stdout)
        self.assertEqual((ref["status"], ref["restarts"], ref["last_step"]), ("succeeded", 0, 391))
        ref_loss = final_val_loss(os.path.join(ref_db + ".runs", "kill10", "run-1"))

        log = os.path.join(self.db + ".runs", "kill10", "run-1")
        rng = random.Random(23)
        run = [stutil.CLI, "run", p, "--db", self.db, "--json", "--quiet", "--node"]
        rc, out, err, k1 = self.kill_attempts(run + ["node-a"], log, rng, 4, mark_at=4)
        self.assertEqual((rc, k1), (1, 4), err)
        self.assertIn("health check after a failure on node-a failed", err)
        self.assertIn("fault marker on node-a", err)
        self.assertIn("1 failure on this node", err)
        os.remove(self.mark + ".node-a")  # repaired: the run goes on there
        rc, out, err, k2 = self.kill_attempts(run + ["node-a"], log, rng, 3, mark_at=3)
        self.assertEqual((rc, k2), (1, 3), err)
        self.assertIn("2 failures on this node", err)
        self.assertIn("the node is quarantined", err)
        r = cli("run", p, "--db", self.db, "--node", "node-a")
        self.assertEqual(r.returncode, 1)
        self.assertIn("node node-a is quarantined for sweep 'kill10': 2 failed health checks",
                      r.stderr)
        rc, out, err, k3 = self.kill_attempts(run + ["node-b"], log, rng, 3)
        self.assertEqual((rc, k3), (0, 3), err)
        s = json.loads(out)
        self.assertEqual((s["status"], s["last_step"]), ("succeeded", 391))
        self.assertGreaterEqual(s["restarts"], 10)
        self.assertGreater(s["lost_seconds"], 0)
        self.assertGreater(s["lost_steps"], 0)
        # the same float to the bit: as printed, and as stored
        self.assertEqual(final_val_loss(log), ref_loss)
        self.assertEqual(s["objective"], ref["objective"])
        # every step's loss of every attempt is the uninterrupted run's, as printed
        def step_losses(att):
            with open(os.path.join(att, "metrics.jsonl")) as f:
                return [(int(l.split('"step":')[1].split(",")[0]),
                         l.split('"loss":')[1].split(",")[0])
                        for l in f if l.startswith('{"event":"step"') and l.endswith("}\n")]
        ref_steps = dict(step_losses(os.path.join(ref_db + ".runs", "kill10", "run-1",
                                                  "attempt-1")))
        firsts = []  # the attempts' first steps, from the second attempt on
        for n in range(1, s["attempts"] + 1):
            got = step_losses(os.path.join(log, "attempt-%d" % n))
            self.assertEqual(got, [(k, ref_steps[k]) for k, _ in got], "attempt %d" % n)
            if n > 1:
                firsts.append(got[0][0])
        # each resumed from a checkpoint (one past a multiple of 5; 1: none yet), several
        # different ones
        self.assertTrue(all(x % 5 == 1 for x in firsts), firsts)
        self.assertGreater(firsts[-1], 1, firsts)
        self.assertGreaterEqual(len(set(firsts)), 4, firsts)
        with sqlite3.connect(self.db) as c:
            killed = c.execute("SELECT count(*) FROM attempts WHERE signal = 9").fetchone()[0]
        self.assertEqual(killed, 10)
        js = json.loads(cli("sweep", "status", "--db", self.db, "--json").stdout)
        self.assertEqual([q["node"] for q in js["quarantined"]], ["node-a"])
        why = js["quarantined"][0]["why"]
        self.assertTrue(why.startswith("2 failed health checks; the last: "), why)
        self.assertTrue(why.endswith(": exit 1: fault marker on node-a"), why)
        print("\nkilled 10 times: %d attempts, %d restarts, lost %.3f s (%.3f work, %.3f down), "
              "%d steps done again, the last attempt from step %d; val_loss %s = uninterrupted"
              % (s["attempts"], s["restarts"], s["lost_seconds"], s["lost_work_seconds"],
                 s["downtime_seconds"], s["lost_steps"], firsts[-1], ref_loss), file=sys.stderr)


if __name__ == "__main__":
    unittest.main()
