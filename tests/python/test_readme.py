"""test_readme.py -- every command of README.md's "Using it" block runs as written, from a
directory laid out like a fresh clone after `make` (build/ and examples/ of this checkout), one
after another, and each exits 0. The sweep is the long one: by default the test runs a small
variant of examples/tiny-gpt.yaml (8 runs instead of 32, and extrapolate at 1e11 instead of
3e11) and says so; ST_README_FULL=1 runs the file and the commands exactly as written (about a
minute and a half on 2 cores). The "Two commands" block (`make demo`, `scripts/test`) is what
CI runs itself (`.ci/run`; `make demo-quick` is its small variant): here only the targets and
the script are checked to exist. The Python binding's one-liner is run too. The example sweeps
run from another directory (their `workdir` names the repository root), small variants of
each."""

import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import unittest

import stutil

FULL = bool(os.environ.get("ST_README_FULL"))


def readme_block(title):
    with open(os.path.join(stutil.ROOT, "README.md")) as f:
        text = f.read()
    sec = text[text.index("## " + title):]
    m = re.search(r"```sh\n(.*?)```", sec, re.S)
    cmds = []
    for line in m.group(1).splitlines():
        line = re.sub(r"\s+#.*$", "", line).strip()
        if line:
            cmds.append(line)
    return cmds


@unittest.skipUnless(os.path.exists(stutil.CLI) and
                     os.path.exists(os.path.join(stutil.BUILD, "scaletune-train")),
                     "no scaletune or scaletune-train in the build directory (run make)")
class TestReadme(unittest.TestCase):
    def test_using_it(self):
        cmds = readme_block("Using it")
        self.assertGreaterEqual(len(cmds), 5)
        self.assertTrue(all(c.startswith("build/scaletune ") for c in cmds), cmds)
        with tempfile.TemporaryDirectory() as d:
            # a fresh clone after make: build/ (this build directory) and a copy of examples/
            os.symlink(stutil.BUILD, os.path.join(d, "build"))
            shutil.copytree(os.path.join(stutil.ROOT, "examples"), os.path.join(d, "examples"),
                            ignore=shutil.ignore_patterns("__pycache__"))
            if not FULL:
                y = os.path.join(d, "examples", "tiny-gpt.yaml")
                with open(y) as f:
                    text = f.read()
                self.assertIn("budget: {runs: 32,", text)
                with open(y, "w") as f:
                    f.write(text.replace("budget: {runs: 32,", "budget: {runs: 8,"))
            for c in cmds:
                run = c if FULL else c.replace("--compute 3e11", "--compute 1e11")
                r = subprocess.run(["bash", "-c", "set -o pipefail; " + run], cwd=d,
                                   env=stutil.tool_env(), capture_output=True, text=True,
                                   timeout=600)
                self.assertEqual(r.returncode, 0, "%s\n%s\n%s" % (run, r.stdout[-2000:],
                                                                 r.stderr[-2000:]))
            self.assertTrue(os.path.getsize(os.path.join(d, "report.html")) > 1000)
            with open(os.path.join(d, "report.html")) as f:  # the large run against its prediction
                self.assertIn("<h2>Validation</h2>", f.read())
            st = subprocess.run([stutil.CLI, "sweep", "list", "--db", "sweep.db"], cwd=d,
                                capture_output=True, text=True, env=stutil.tool_env())
            self.assertRegex(st.stdout, r"tiny-gpt-large\s+1\s+1\s")

    def test_examples_from_another_directory(self):
        """The example sweeps name the repository root as their workdir (relative to the file),
        so they run from any directory: small variants (a few runs each) of examples/tiny-gpt.yaml,
        examples/tiny-gpt-branches.yaml (whose runs also get their cooldown branches),
        examples/python/toy-sweep.yaml and examples/fake-trainer.yaml, in a fresh-clone layout,
        launched by absolute path from a directory outside it."""
        fake = os.path.join(stutil.BUILD, "tests", "runner", "fake_trainer")
        budgets = [("tiny-gpt.yaml", "budget: {runs: 32,", "budget: {runs: 2,", 2),
                   ("tiny-gpt-branches.yaml", "budget: {runs: 24,", "budget: {runs: 2,", 2),
                   ("python/toy-sweep.yaml", "budget: {runs: 12,", "budget: {runs: 3,", 3)]
        if os.path.exists(fake):
            budgets.append(("fake-trainer.yaml", "budget: {runs: 24,", "budget: {runs: 4,", 4))
        with tempfile.TemporaryDirectory() as d, tempfile.TemporaryDirectory() as away:
            os.symlink(stutil.BUILD, os.path.join(d, "build"))
            os.symlink(os.path.join(stutil.ROOT, "bindings"), os.path.join(d, "bindings"))
            shutil.copytree(os.path.join(stutil.ROOT, "examples"), os.path.join(d, "examples"),
                            ignore=shutil.ignore_patterns("__pycache__"))
            for name, old, new, n in budgets:
                y = os.path.join(d, "examples", name)
                with open(y) as f:
                    text = f.read()
                self.assertIn(old, text)
                self.assertIn("\nworkdir: ", text)
                with open(y, "w") as f:
                    f.write(text.replace(old, new))
                db = os.path.join(away, name.replace("/", "-") + ".db")
                r = subprocess.run([os.path.join(d, "build", "scaletune"), "sweep", "launch", y,
                                    "--db", db], cwd=away, env=stutil.tool_env(),
                                   capture_output=True, text=True, timeout=600)
                self.assertEqual(r.returncode, 0, "%s\n%s" % (name, r.stderr[-2000:]))
                st = subprocess.run([stutil.CLI, "sweep", "status", "--db", db, "--json"],
                                    cwd=away, env=stutil.tool_env(), capture_output=True,
                                    text=True)
                status = json.loads(st.stdout)
                self.assertEqual(status["runs"]["succeeded"], n, name)
                if "branches" in name:  # two cooldown branches off each run, with the trainer
                    self.assertEqual(status["branches"]["total"], 2 * n, st.stdout)
                    self.assertEqual(status["branches"]["succeeded"], 2 * n, st.stdout)

    def test_two_commands_exist(self):
        cmds = readme_block("Two commands")
        self.assertEqual(cmds, ["make demo", "scripts/test"])
        self.assertTrue(os.access(os.path.join(stutil.ROOT, "scripts", "test"), os.X_OK))
        r = subprocess.run(["make", "-n", "demo", "demo-quick"], cwd=stutil.ROOT,
                           capture_output=True, text=True, env=stutil.tool_env())
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_python_one_liner(self):
        with open(os.path.join(stutil.ROOT, "README.md")) as f:
            m = re.search(r"`(PYTHONPATH=bindings/python python3 -c '[^`]*')`", f.read())
        self.assertTrue(m)
        r = subprocess.run(["bash", "-c", m.group(1)], cwd=stutil.ROOT, capture_output=True,
                           text=True, env=stutil.python_env())
        self.assertEqual(r.returncode, 0, r.stderr)


if __name__ == "__main__":
    unittest.main()
