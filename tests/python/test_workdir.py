"""test_workdir.py -- a sweep file's `workdir` (docs/config.md) as a user meets it: a relative
workdir is resolved against the directory holding the sweep file, so `sweep launch` from any
other directory runs the same sweep (a relative program path and the runs' working directory
come from there); the store records the absolute directory, so `sweep resume` from yet another
directory uses it too, and so does a sweep without workdir (the directory it was launched or
created in); preflight refuses a workdir that does not exist, naming file:line and the field,
before anything is recorded."""

import json
import os
import sqlite3
import tempfile
import unittest

import stutil

FAKE = os.path.join(stutil.BUILD, "tests", "runner", "fake_trainer")

SWEEP = """name: %s
command: ["bin/trainer", "--x", "{x}", "--steps", "3"]
%sobjective: {metric: val_loss}
cost: {metric: flops}
parameters:
  x: {space: linear, min: -2, max: 3, center: 0}
budget: {runs: 3}
seed: 1
"""


def cli(*args, cwd):
    return stutil.run([stutil.CLI] + list(args), cwd=cwd, check=False)


@unittest.skipUnless(os.path.exists(stutil.CLI) and os.path.exists(FAKE),
                     "no scaletune or fake_trainer in the build directory (run make test)")
class TestWorkdir(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        d = os.path.realpath(self.tmp.name)
        self.d = d
        self.proj = os.path.join(d, "proj")  # bin/trainer lives here
        self.elsewhere = os.path.join(d, "elsewhere")
        for sub in ("proj/bin", "proj/sweeps", "elsewhere"):
            os.makedirs(os.path.join(d, sub))
        os.symlink(FAKE, os.path.join(self.proj, "bin", "trainer"))

    def tearDown(self):
        self.tmp.cleanup()

    def sweep(self, name, workdir_line):
        path = os.path.join(self.proj, "sweeps", name + ".yaml")
        with open(path, "w") as f:
            f.write(SWEEP % (name, workdir_line))
        return path

    def succeeded(self, db, cwd):
        r = cli("sweep", "status", "--db", db, "--json", cwd=cwd)
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)["runs"]["succeeded"]

    def recorded(self, db):
        with sqlite3.connect(db) as h:
            return h.execute("SELECT name, workdir FROM sweeps ORDER BY id").fetchall()

    def test_launch_from_another_directory(self):
        self.sweep("up", "workdir: ..\n")
        # the file named by a relative path from a directory where bin/trainer is not
        r = cli("sweep", "launch", "../proj/sweeps/up.yaml", "--db", "s.db", cwd=self.elsewhere)
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        db = os.path.join(self.elsewhere, "s.db")
        self.assertEqual(self.succeeded(db, self.d), 3)
        self.assertEqual(self.recorded(db), [("up", self.proj)])

    def test_resume_uses_the_recorded_directory(self):
        # recorded without running (sweep create), resumed from two other directories
        self.sweep("up", "workdir: ..\n")
        self.sweep("plain", "")
        db = os.path.join(self.d, "s.db")
        r = cli("sweep", "create", "proj/sweeps/up.yaml", "--db", db, cwd=self.d)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = cli("sweep", "create", "sweeps/plain.yaml", "--db", db, cwd=self.proj)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.recorded(db), [("up", self.proj), ("plain", self.proj)])
        for name in ("up", "plain"):
            r = cli("sweep", "resume", "--sweep", name, "--db", db, cwd=self.elsewhere)
            self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        r = cli("sweep", "export", "--db", db, "--sweep", "plain", "--json", cwd=self.d)
        self.assertEqual(r.returncode, 0, r.stderr)
        runs = json.loads(r.stdout)
        runs = runs["runs"] if isinstance(runs, dict) else runs
        self.assertEqual(len(runs), 3)
        self.assertTrue(all(x["status"] == "succeeded" for x in runs), runs)

    def test_preflight_refuses_a_missing_workdir(self):
        path = self.sweep("gone", "workdir: ../nowhere\n")
        r = cli("sweep", "launch", path, "--db", "s.db", cwd=self.elsewhere)
        self.assertEqual(r.returncode, 1)
        self.assertIn("gone.yaml:3: workdir: cannot enter '%s'" %
                      os.path.join(self.proj, "nowhere"), r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.elsewhere, "s.db")))
        # without workdir, the program is looked up from the directory launch runs in
        path = self.sweep("plain", "")
        r = cli("sweep", "launch", path, "--db", "s.db", cwd=self.elsewhere)
        self.assertEqual(r.returncode, 1)
        self.assertIn("plain.yaml:2: command: program 'bin/trainer' cannot run", r.stderr)
        self.assertIn("set 'workdir'", r.stderr)


if __name__ == "__main__":
    unittest.main()
