"""test_cli_sweep.py -- `scaletune sweep` as a user meets it: commands other than launch/create
never create a store ("no such store: PATH", non-zero exit, no file); a SQLite file of another
program is refused and left byte for byte; list, delete (exact name; refused while a live
controller holds the sweep) and rename; status --json with the best run's parameters; after
kill -9 of the controller, status says "not running (last heartbeat N s ago ...)"; per-command
--help, "did you mean", and tell without --cost naming what is missing."""

import json
import os
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


if __name__ == "__main__":
    unittest.main()
