"""test_cli_sweep.py -- `scaletune sweep` as a user meets it: commands other than launch/create
never create a store ("no such store: PATH", non-zero exit, no file); a SQLite file of another
program is refused and left byte for byte; list, delete (exact name; refused while a live
controller holds the sweep) and rename; status --json with the best run's parameters; after
kill -9 of the controller, status says "not running (last heartbeat N s ago ...)"; watch follows a sweep to
its end (exit 0 when finished, 1 when nothing runs it); per-command
--help, "did you mean", and tell without --cost naming what is missing."""

import json
import os
import re
import signal
import sqlite3
import subprocess
import tempfile
import time
import unittest

import stutil

TOY = """name: %s
command: ["python3", "-c", "import json; x = {x}; print(json.dumps({{'event': 'final', 'val_loss': (x - 1) ** 2 + 2, 'flops': 1e9 * (1 + x * x)}}))"]
objective: {metric: val_loss}
cost: {metric: flops}
parameters:
  x: {space: linear, min: -2, max: 3, center: 0}
  k: {value: 7}
budget: {runs: %d}
seed: 3
optimizer: {num_random_samples: 2}
"""

SLOW = """name: slow
command: ["sleep", "{t}"]
objective: {metric: val_loss}
cost: {metric: flops}
parameters:
  t: {space: linear, min: 5, max: 6, center: 5.5}
budget: {runs: 1}
"""


# runs 1-3 end at once; later runs report two steps, then train until stopped
LIVE = """name: live
command: ["python3", "-c", "import json, time\\nr = {_run}\\nif r > 3:\\n    for s in (10, 20): print(json.dumps(dict(event='step', step=s, loss=4.0 - s / 40)), flush=True)\\n    time.sleep(60)\\nprint(json.dumps(dict(event='final', val_loss=2.0 + {x} ** 2, flops=1e9)))"]
objective: {metric: val_loss}
cost: {metric: flops}
parameters:
  x: {space: linear, min: -2, max: 3, center: 0}
budget: {runs: 8}
seed: 3
"""


def cli(*args, check=False, cwd=None):
    return stutil.run([stutil.CLI] + list(args), check=check, cwd=cwd)


@unittest.skipUnless(os.path.exists(stutil.CLI), "no scaletune CLI in the build directory")
class TestCliSweep(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.d = self.tmp.name
        self.db = os.path.join(self.d, "s.db")

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, name, text):
        p = os.path.join(self.d, name)
        with open(p, "w") as f:
            f.write(text)
        return p

    def toy(self, name="toy", runs=4):
        p = self.write(name + ".yaml", TOY % (name, runs))
        cli("sweep", "launch", p, "--db", self.db, check=True)

    def test_no_command_creates_a_store(self):
        missing = os.path.join(self.d, "typo.db")
        for args in (["status"], ["status", "--json"], ["list"], ["stop"], ["export", "--json"],
                     ["ask"], ["resume"], ["delete", "x"], ["rename", "a", "b"],
                     ["tell", "1", "--failed"]):
            r = cli("sweep", *args, "--db", missing)
            self.assertNotEqual(r.returncode, 0, args)
            self.assertIn("no such store: " + missing, r.stderr, args)
            self.assertFalse(os.path.exists(missing), args)
        r = stutil.run([stutil.CLI, "report", "--db", missing, "--out", os.path.join(self.d, "r.html")],
                       check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertFalse(os.path.exists(missing))

    def test_foreign_sqlite_is_refused_and_untouched(self):
        other = os.path.join(self.d, "other.db")
        con = sqlite3.connect(other)
        con.execute("CREATE TABLE notes(t TEXT)")
        con.execute("INSERT INTO notes VALUES ('mine')")
        con.commit()
        con.close()
        with open(other, "rb") as f:
            before = f.read()
        p = self.write("toy.yaml", TOY % ("toy", 2))
        for args in (["status"], ["list"], ["launch", p], ["create", p], ["delete", "toy"]):
            r = cli("sweep", *args, "--db", other)
            self.assertNotEqual(r.returncode, 0, args)
            self.assertIn("not a scaletune store", r.stderr, args)
        with open(other, "rb") as f:
            self.assertEqual(f.read(), before)
        self.assertFalse(os.path.exists(other + "-wal"))

    def test_list_rename_delete(self):
        self.toy("first", 3)
        self.toy("second", 2)
        r = cli("sweep", "list", "--db", self.db, "--json", check=True)
        rows = json.loads(r.stdout)
        self.assertEqual([x["sweep"] for x in rows], ["first", "second"])
        self.assertEqual([x["runs"] for x in rows], [3, 2])
        # with several sweeps, the refusal lists the names to choose from
        r = cli("sweep", "status", "--db", self.db)
        self.assertEqual(r.returncode, 1)
        self.assertIn("first second", r.stderr)
        cli("sweep", "rename", "first", "one", "--db", self.db, check=True)
        self.assertNotEqual(cli("sweep", "rename", "one", "second", "--db", self.db).returncode, 0)
        st = json.loads(cli("sweep", "status", "--db", self.db, "--sweep", "one", "--json",
                            check=True).stdout)
        self.assertEqual(st["sweep"], "one")
        self.assertEqual(st["runs"]["total"], 3)
        exp = json.loads(cli("sweep", "export", "--json", "--db", self.db, "--sweep", "one",
                             check=True).stdout)
        self.assertEqual(exp["sweep"], "one")
        self.assertEqual(cli("sweep", "delete", "--db", self.db).returncode, 2)  # no name
        self.assertEqual(cli("sweep", "delete", "on", "--db", self.db).returncode, 1)
        cli("sweep", "delete", "one", "--db", self.db, check=True)
        rows = json.loads(cli("sweep", "list", "--db", self.db, "--json", check=True).stdout)
        self.assertEqual([x["sweep"] for x in rows], ["second"])
        # the name is free again
        self.toy("one", 1)

    def test_status_json_best_params(self):
        self.toy("toy", 5)
        st = json.loads(cli("sweep", "status", "--db", self.db, "--json", check=True).stdout)
        exp = json.loads(cli("sweep", "export", "--json", "--db", self.db, check=True).stdout)
        ok = [r for r in exp["runs"] if r["status"] == "succeeded"]
        best = min(ok, key=lambda r: r["objective"])
        self.assertEqual(st["best"]["suggestion_id"], best["suggestion_id"])
        self.assertAlmostEqual(st["best"]["params"]["x"], best["params"]["x"], places=12)
        self.assertEqual(st["best"]["params"]["k"], 7)
        self.assertAlmostEqual(st["best"]["objective"], (best["params"]["x"] - 1) ** 2 + 2, places=9)
        self.assertEqual(st["runs"]["succeeded"], 5)
        self.assertFalse(st["controller"]["running"])
        self.assertGreaterEqual(st["elapsed_seconds"], 0)
        self.assertLess(st["elapsed_seconds"], 120)
        text = cli("sweep", "status", "--db", self.db, check=True).stdout
        self.assertRegex(text, r"params\s+x=\S+ k=7")
        self.assertRegex(text, r"controller not running")

    def test_kill_9_shows_dead_controller(self):
        p = self.write("slow.yaml", SLOW)
        proc = subprocess.Popen([stutil.CLI, "sweep", "launch", p, "--db", self.db],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                env=stutil.tool_env(), start_new_session=True)
        try:
            st = None
            for _ in range(200):
                r = cli("sweep", "status", "--db", self.db, "--json")
                if r.returncode == 0:
                    st = json.loads(r.stdout)
                    if st["runs"]["running"] == 1:
                        break
                time.sleep(0.05)
            self.assertTrue(st and st["controller"]["running"], st)
            self.assertIn("running (", cli("sweep", "status", "--db", self.db).stdout)
            r = cli("sweep", "delete", "slow", "--db", self.db)
            self.assertEqual(r.returncode, 1)
            self.assertIn("live controller", r.stderr)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            time.sleep(1.1)
            text = cli("sweep", "status", "--db", self.db, check=True).stdout
            self.assertRegex(text, r"controller not running \(last heartbeat [0-9]+ s ago")
            st = json.loads(cli("sweep", "status", "--db", self.db, "--json", check=True).stdout)
            self.assertFalse(st["controller"]["running"])
            self.assertGreaterEqual(st["controller"]["heartbeat_age_seconds"], 1.0)
        finally:
            # the controller, if a check above left early; the attempt's sleep (its own
            # process group) ends by itself within seconds
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    def test_status_running_step_loss_rate_eta(self):
        p = self.write("live.yaml", LIVE)
        proc = subprocess.Popen([stutil.CLI, "sweep", "launch", p, "--db", self.db],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                env=stutil.tool_env(), start_new_session=True)
        try:
            st = None
            for _ in range(400):
                r = cli("sweep", "status", "--db", self.db, "--json")
                if r.returncode == 0:
                    st = json.loads(r.stdout)
                    if st["running"] and st["running"][0]["step"] == 20:
                        break
                time.sleep(0.05)
            self.assertEqual(st["runs"]["succeeded"], 3, st)
            self.assertEqual(st["runs"]["running"], 1)
            run = st["running"][0]
            self.assertEqual((run["suggestion_id"], run["attempt"], run["step"], run["loss"],
                              run["metric"]), (4, 1, 20, 3.5, "loss"))
            self.assertGreaterEqual(run["seconds"], 0)
            # 3 runs ended: the rate over them, and the ETA of the 5 left while the controller runs
            self.assertGreater(st["rate_runs_per_min"], 0)
            self.assertAlmostEqual(st["eta_seconds"], 5 * 60 / st["rate_runs_per_min"], places=6)
            text = cli("sweep", "status", "--db", self.db, check=True).stdout
            self.assertRegex(text, r"rate +[0-9.e+]+ runs/min .*, ETA [0-9]")
            self.assertRegex(text, r"running +run 4 \(attempt 1, [0-9]+ s\): step 20, loss 3.5")
        finally:
            cli("sweep", "stop", "--db", self.db)
            proc.wait(timeout=60)
        st = json.loads(cli("sweep", "status", "--db", self.db, "--json", check=True).stdout)
        self.assertEqual((st["running"], st["eta_seconds"]), ([], None))  # nothing runs it

    def test_watch(self):
        p = self.write("w.yaml", TOY % ("w", 6))
        proc = subprocess.Popen([stutil.CLI, "sweep", "launch", p, "--db", self.db],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                env=stutil.tool_env(), start_new_session=True)
        try:
            for _ in range(200):  # the store exists once launch has created it
                if cli("sweep", "status", "--db", self.db).returncode == 0:
                    break
                time.sleep(0.05)
            r = cli("sweep", "watch", "--db", self.db, "--interval", "0.1")
            self.assertEqual(r.returncode, 0, r.stderr)
            lines = r.stdout.strip().splitlines()
            self.assertRegex(lines[0], r"^[0-9]{2}:[0-9]{2}:[0-9]{2} w: runs [0-9]+/6: ")
            self.assertRegex(lines[-2], r"runs 6/6: 0 running, 0 pending, 6 ok, 0 failed, 0 infra, "
                                        r"0 stopped \| best [0-9.]+ .*controller not running")
            self.assertEqual(lines[-1], "sweep 'w' finished")
        finally:
            proc.wait(timeout=60)
        # a sweep that was only created: nothing runs it, watch says so and exits 1
        self.assertEqual(cli("sweep", "create", self.write("c.yaml", TOY % ("c", 3)), "--db",
                             self.db).returncode, 0)
        r = cli("sweep", "watch", "--db", self.db, "--sweep", "c", "--interval", "0.1")
        self.assertEqual(r.returncode, 1)
        self.assertIn("sweep 'c' is not running: no live controller and no run running (0 of 3 "
                      "runs ended)", r.stderr)
        self.assertIn("sweep resume", r.stderr)
        r = cli("sweep", "watch", "--db", self.db, "--interval", "0")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--interval: '0' is not a positive number of seconds", r.stderr)

    def test_preflight(self):
        self.toy("other", 1)  # the store exists: a refused launch must not take the name
        bad = TOY.replace('["python3", "-c"', '["no-such-program-xyz", "-c"')
        p = self.write("bad.yaml", bad % ("bad", 2))
        r = cli("sweep", "launch", p, "--db", self.db)
        self.assertEqual(r.returncode, 1)
        self.assertIn("%s:2: command: program 'no-such-program-xyz' not found on PATH" % p, r.stderr)
        noexec = self.write("noexec.sh", "#!/bin/sh\n")
        p = self.write("bad2.yaml", TOY.replace('["python3", "-c"', '["%s", "-c"' % noexec) % ("bad", 2))
        r = cli("sweep", "launch", p, "--db", self.db)
        self.assertEqual(r.returncode, 1)
        self.assertIn("not executable", r.stderr)
        # a relative path resolves from where the sweep is launched
        p = self.write("bad3.yaml", TOY.replace('["python3", "-c"', '["./noexec.sh", "-c"') % ("bad", 2))
        r = cli("sweep", "launch", p, "--db", self.db, cwd=stutil.ROOT)
        self.assertEqual(r.returncode, 1)
        self.assertIn("resolved as %s/./noexec.sh" % stutil.ROOT, r.stderr)
        names = [x["sweep"] for x in json.loads(cli("sweep", "list", "--db", self.db, "--json",
                                                    check=True).stdout)]
        self.assertEqual(names, ["other"])

    def test_zero_successes_exit_nonzero(self):
        p = self.write("f.yaml", TOY.replace('"python3", "-c"', '"/bin/false", "-c"')
                       .replace("budget: {runs: %d}", "budget: {runs: %d}\nretries: {infrastructure: 0}")
                       % ("f", 2))
        r = cli("sweep", "launch", p, "--db", self.db)
        self.assertEqual(r.returncode, 1)
        self.assertIn("finished with 0 successful runs of 2", r.stderr)
        # every run ended infra_failed (exit 1, no retries): resume says the same
        st = json.loads(cli("sweep", "status", "--db", self.db, "--json", check=True).stdout)
        self.assertEqual(st["runs"]["infra_failed"], 2)
        r = cli("sweep", "resume", "f", "--db", self.db)
        self.assertEqual(r.returncode, 1)
        self.assertIn("finished with 0 successful runs of 2 (0 failed, 2 infrastructure", r.stderr)

    def test_bad_final_is_a_trainer_error(self):
        # a final record whose objective is a string: 2 runs (fewer than the 5 that stop a
        # sweep), each ended at once; the closing message names the trainer, not infrastructure
        bad = TOY.replace("'val_loss': (x - 1) ** 2 + 2", "'val_loss': 'low'")
        p = self.write("b.yaml", bad % ("b", 2))
        r = cli("sweep", "launch", p, "--db", self.db)
        self.assertEqual(r.returncode, 1)
        self.assertIn("sweep 'b': 2 of 2 runs printed a malformed final record (a configuration "
                      "error of the trainer, not infrastructure): run 2 attempt 1: bad_final "
                      "('val_loss' is not a number in the final record: {\"event\": \"final\", "
                      "\"val_loss\": \"low\"", r.stderr)
        self.assertNotIn("infrastructure failures", r.stderr)
        st = json.loads(cli("sweep", "status", "--db", self.db, "--json", check=True).stdout)
        self.assertEqual((st["runs"]["infra_failed"], st["runs"]["bad_final"]), (2, 2))
        self.assertEqual(st["attempts"], 2)  # not retried
        r = cli("sweep", "status", "--db", self.db, check=True)
        self.assertIn("2 of the infra_failed printed a malformed final record", r.stdout)
        r = cli("sweep", "resume", "b", "--db", self.db)
        self.assertEqual(r.returncode, 1)
        self.assertIn("2 of 2 runs printed a malformed final record", r.stderr)

    def test_sigpipe_stops_cleanly(self):
        p = self.write("toy.yaml", TOY % ("piped", 50))
        sh = "'%s' sweep launch '%s' --db '%s' 2>'%s/err' | head -n 1; echo \"rc=${PIPESTATUS[0]}\"" % (
            stutil.CLI, p, self.db, self.d)
        r = subprocess.run(["bash", "-c", sh], capture_output=True, text=True, timeout=120,
                           env=stutil.tool_env())
        self.assertIn("rc=0", r.stdout)  # not killed by SIGPIPE (that is rc=141)
        with open(os.path.join(self.d, "err")) as f:
            self.assertIn("output pipe was closed", f.read())
        st = json.loads(cli("sweep", "status", "--db", self.db, "--json", check=True).stdout)
        self.assertFalse(st["controller"]["running"])
        self.assertLess(st["runs"]["total"], 50)
        self.assertEqual(st["runs"]["running"], 0)

    def test_help_typos_and_tell(self):
        r = cli("sweep", "launch", "--help", check=True)
        self.assertTrue(r.stdout.startswith("usage: scaletune sweep launch FILE"))
        r = cli("sweep", "stauts")
        self.assertEqual(r.returncode, 2)
        self.assertIn("did you mean 'scaletune sweep status'", r.stderr)
        r = cli("sweeep")
        self.assertEqual(r.returncode, 2)
        self.assertIn("did you mean 'scaletune sweep'", r.stderr)
        r = cli("sweep", "tell", "3", "--objective", "1.5", "--db", self.db)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--cost is missing", r.stderr)


LLMSIM = """name: sim
command: ["%s", "--N", "{N}", "--tokens", "{tokens}", "--lr", "{lr}", "--batch", "{batch}",
          "--warmup", "{warmup}", "--weight-decay", "{weight_decay}", "--seed", "{_run}"]
objective: {metric: val_loss, goal: minimize}
cost: {metric: flops, expr: "6 * {N} * {tokens}"}
parameters:
  N:            {space: log, min: 2.0e6, max: 6.0e7, center: 1.0e7}
  tokens:       {space: log, min: 4.0e7, max: 2.0e9, center: 2.0e8}
  lr:           {space: log, min: 1.0e-4, max: 0.5, center: 3.0e-3}
  batch:        {space: log, min: 2.0e3, max: 1.0e6, center: 3.0e4}
  warmup:       {space: logit, min: 0.0, max: 0.5, center: 0.02}
  weight_decay: {space: log, min: 1.0e-3, max: 1.0, center: 0.1}
budget: {runs: 16, max_cost_per_run: 1.0e18}
parallel: 2
retries: {infrastructure: 1, backoff_seconds: 0.1}
timeouts: {no_metrics_seconds: 30}
seed: 1
optimizer: {num_random_samples: 8, search_radius: 1.0}
"""

SIM = os.path.join(stutil.BUILD, "bench", "llmsim", "llmsim")


@unittest.skipUnless(os.path.exists(stutil.CLI) and os.path.exists(SIM), "no CLI or llmsim built")
class TestCliGlue(unittest.TestCase):
    """export -> fit -> extrapolate -> the large run, with no conversion in between."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.db = os.path.join(cls.tmp.name, "s.db")
        y = os.path.join(cls.tmp.name, "sim.yaml")
        with open(y, "w") as f:
            f.write(LLMSIM % SIM)
        stutil.run([stutil.CLI, "sweep", "launch", y, "--db", cls.db], timeout=300)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_export_n_d_and_fit_from_the_store(self):
        exp = json.loads(cli("sweep", "export", "--json", "--db", self.db, "--sweep", "sim",
                             check=True).stdout)
        ok = [r for r in exp["runs"] if r["status"] == "succeeded"]
        self.assertGreater(len(ok), 8)
        for r in ok:  # llmsim's final record: params = N, tokens = D
            self.assertEqual(r["N"], r["final"]["params"])
            self.assertEqual(r["D"], r["final"]["tokens"])
            self.assertAlmostEqual(r["N"] / r["params"]["N"], 1, places=9)
        csv = cli("sweep", "export", "--csv", "--db", self.db, "--sweep", "sim", check=True).stdout.splitlines()
        head = csv[0].split(",")
        # a parameter is called N: the final record's N and D are final_N and final_D
        self.assertIn("final_N", head)
        self.assertIn("final.val_loss", head)
        # the reference: the same table written by hand from the JSON export
        ref = os.path.join(self.tmp.name, "ref.csv")
        with open(ref, "w") as f:
            f.write("N,D,loss\n")
            for r in ok:
                f.write("%.17g,%.17g,%.17g\n" % (r["N"], r["D"], r["objective"]))
        a = json.loads(cli("fit", "--db", self.db, "--sweep", "sim", "--law", "chinchilla",
                           "--json", "--threads", "1", check=True).stdout)
        b = json.loads(cli("fit", "--data", ref, "--law", "chinchilla", "--json", "--threads",
                           "1", check=True).stdout)
        self.assertEqual(a["params"], b["params"])
        self.assertEqual(a["data"]["rows"], len(ok))
        r = cli("fit", "--db", self.db, "--data", ref, "--law", "chinchilla")
        self.assertEqual(r.returncode, 2)

    def test_emit_yaml_launches_the_large_run(self):
        args = ["extrapolate", "--db", self.db, "--sweep", "sim", "--factor", "3", "--bootstrap",
                "20", "--no-backtest", "--allow-unsafe"]
        js = json.loads(cli(*args, "--json", check=True).stdout)
        y = cli(*args, "--emit", "yaml", check=True).stdout
        self.assertIn("name: \"sim-large\"", y)
        # the header says how to run it as the large run, with checkpoints
        head = "".join(l for l in y.splitlines(True) if l.startswith("#"))
        self.assertIn("#   scaletune run THIS_FILE --db DB", head)
        self.assertIn("{_checkpoint}", head)
        self.assertIn("{_resume}", head)
        vals = dict(re.findall(r"^  (\w+): \{value: (\S+)\}$", y, re.M))
        self.assertEqual(set(vals), {"N", "tokens", "lr", "batch", "warmup", "weight_decay"})
        for k, v in js["recommended"].items():
            self.assertAlmostEqual(float(vals[k]) / v, 1, places=6, msg=k)
        path = os.path.join(self.tmp.name, "large.yaml")
        with open(path, "w") as f:
            f.write(y)
        cli("sweep", "launch", path, "--db", self.db, check=True)
        st = json.loads(cli("sweep", "status", "--db", self.db, "--sweep", "sim-large", "--json",
                            check=True).stdout)
        self.assertEqual(st["runs"]["succeeded"], 1)
        for k, v in st["best"]["params"].items():
            self.assertAlmostEqual(v, float(vals[k]), places=12)
        # its cost is 6 N D at the target compute (3x the largest run)
        self.assertAlmostEqual(st["best"]["cost"] / js["compute"], 1, places=6)
        cmd = cli(*args, "--emit", "command", check=True).stdout.split()
        # behind the directory the small runs ran in (recorded at launch: cli's cwd, ROOT)
        self.assertEqual(cmd[:3], ["cd", stutil.ROOT, "&&"])
        self.assertIn("workdir: \"%s\"\n" % stutil.ROOT, y)
        cmd = cmd[3:]
        self.assertEqual(cmd[0], SIM)
        self.assertEqual(cmd[cmd.index("--N") + 1], vals["N"])
        self.assertEqual(cmd[cmd.index("--seed") + 1], "1")

    def test_fit_needs_n_and_d(self):
        with tempfile.TemporaryDirectory() as d:
            db = os.path.join(d, "t.db")
            y = os.path.join(d, "t.yaml")
            with open(y, "w") as f:
                f.write(TOY % ("toy", 3))
            cli("sweep", "launch", y, "--db", db, check=True)
            r = cli("fit", "--db", db, "--law", "chinchilla")
            self.assertEqual(r.returncode, 1)
            self.assertIn("params and tokens", r.stderr)


if __name__ == "__main__":
    unittest.main()
