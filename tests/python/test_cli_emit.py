"""test_cli_emit.py -- the large run written and checked by the CLI alone (issue 19 item 5, what
the demo needs): `extrapolate --emit yaml --emit-out FILE` writes the one-run sweep file while
stdout keeps the text; `--set NAME=VALUE` overrides a parameter (a fixed seed or thread count),
an unknown NAME is bad usage before any fit; `--digits N` sets the values' precision; `report
--validate-sweep NAME --expect XP.json` holds the large run to the prediction written before it
ran (and takes its compute), prints one validation line and adds rel_error and inside to the
JSON."""

import json
import os
import re
import tempfile
import unittest

import stutil

SIM = os.path.join(stutil.BUILD, "bench", "llmsim", "llmsim")

LLMSIM = """name: sim
command: ["%s", "--N", "{N}", "--tokens", "{tokens}", "--lr", "{lr}", "--batch", "{batch}",
          "--warmup", "{warmup}", "--weight-decay", "{weight_decay}", "--seed", "{seed}"]
objective: {metric: val_loss, goal: minimize}
cost: {metric: flops, expr: "6 * {N} * {tokens}"}
parameters:
  N:            {space: log, min: 2.0e6, max: 6.0e7, center: 1.0e7}
  tokens:       {space: log, min: 4.0e7, max: 2.0e9, center: 2.0e8}
  lr:           {space: log, min: 1.0e-4, max: 0.5, center: 3.0e-3}
  batch:        {space: log, min: 2.0e3, max: 1.0e6, center: 3.0e4}
  warmup:       {space: logit, min: 0.0, max: 0.5, center: 0.02}
  weight_decay: {space: log, min: 1.0e-3, max: 1.0, center: 0.1}
  seed:         {value: 1}
budget: {runs: 16, max_cost_per_run: 1.0e18}
parallel: 2
retries: {infrastructure: 1, backoff_seconds: 0.1}
timeouts: {no_metrics_seconds: 30}
seed: 1
optimizer: {num_random_samples: 8, search_radius: 1.0}
"""


def cli(*args, check=False):
    return stutil.run([stutil.CLI] + list(args), check=check)


@unittest.skipUnless(os.path.exists(stutil.CLI) and os.path.exists(SIM), "no CLI or llmsim built")
class TestCliEmit(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.d = cls.tmp.name
        cls.db = os.path.join(cls.d, "s.db")
        y = os.path.join(cls.d, "sim.yaml")
        with open(y, "w") as f:
            f.write(LLMSIM % SIM)
        stutil.run([stutil.CLI, "sweep", "launch", y, "--db", cls.db], timeout=300)
        cls.xp = ["extrapolate", "--db", cls.db, "--sweep", "sim", "--factor", "3", "--bootstrap",
                  "20", "--no-backtest", "--allow-unsafe"]

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def values(self, y):
        return dict(re.findall(r"^  (\w+): \{value: (\S+)\}$", y, re.M))

    def test_emit_out_set_digits(self):
        path = os.path.join(self.d, "big.yaml")
        xpj = os.path.join(self.d, "xp.json")
        r = cli(*self.xp, "--out", xpj, "--emit", "yaml", "--emit-out", path, "--name", "big",
                "--set", "seed=1240", "--set", "warmup=0.05", "--digits", "6", check=True)
        # stdout keeps the text; the file has the run
        self.assertIn("recommended settings", r.stdout)
        self.assertRegex(r.stdout, r"(?m)^predicted val_loss: ")
        with open(path) as f:
            y = f.read()
        self.assertIn('name: "big"', y)
        v = self.values(y)
        self.assertEqual(v["seed"], "1240")
        self.assertEqual(v["warmup"], "0.05")
        with open(xpj) as f:
            js = json.load(f)
        for k in ("N", "tokens", "lr", "batch", "weight_decay"):
            self.assertEqual(v[k], "%.6g" % js["recommended"][k], k)
        # the same without --emit-out: the run on stdout, and the same file
        same = cli(*self.xp, "--emit", "yaml", "--name", "big", "--set", "seed=1240", "--set",
                   "warmup=0.05", "--digits", "6", check=True).stdout
        self.assertEqual(same, y)
        # --emit-out with --json: the JSON on stdout
        js2 = json.loads(cli(*self.xp, "--json", "--emit", "yaml", "--emit-out", path,
                             check=True).stdout)
        self.assertEqual(js2["recommended"], js["recommended"])
        # a string value is quoted; the command line takes the override too
        with open(path) as f:
            self.assertIn('  seed: {value: 1}', f.read())
        cmd = cli(*self.xp, "--emit", "command", "--set", "seed=abc def", check=True).stdout
        self.assertIn("--seed 'abc def'", cmd)

    def test_bad_usage(self):
        r = cli(*self.xp, "--emit", "yaml", "--set", "nope=1")
        self.assertEqual(r.returncode, 2)
        self.assertIn("no parameter 'nope'", r.stderr)
        self.assertIn("seed", r.stderr)  # the hint lists the parameters
        self.assertEqual(r.stdout, "")
        for bad in (["--set", "seed=1"], ["--emit", "yaml", "--set", "seed"],
                    ["--emit", "yaml", "--digits", "0"], ["--emit", "yaml", "--digits", "2.5"],
                    ["--emit-out", "x.yaml"]):
            self.assertEqual(cli(*self.xp, *bad).returncode, 2, bad)

    def test_prior_e_usage(self):
        # --prior-e takes a loss > 0 and --prior-e-sd a number >= 0; either error names its
        # option and fits nothing
        for bad in (["--prior-e", "0"], ["--prior-e", "-1"], ["--prior-e", "abc"],
                    ["--prior-e-sd", "-0.5"], ["--far-weight", "-1"], ["--far-weight", "x"]):
            r = cli(*self.xp, *bad)
            self.assertEqual(r.returncode, 2, bad)
            self.assertIn(bad[0], r.stderr)
            self.assertEqual(r.stdout, "")
        self.assertIn("--prior-e E", cli("extrapolate", "--help").stdout)
        r = cli(*self.xp, "--prior-e", "1.8", "--prior-e-sd", "0.3", "--far-weight", "0.2",
                check=True)
        self.assertRegex(r.stdout, r"(?m)^predicted val_loss: ")
        # scaletune report takes the same two options
        html = os.path.join(self.d, "prior.html")
        for bad in (["--prior-e", "0"], ["--prior-e-sd", "-1"], ["--far-weight", "-1"]):
            r = cli("report", "--db", self.db, "--out", html, "--bootstrap", "0", *bad)
            self.assertEqual(r.returncode, 2, bad)
            self.assertIn(bad[0], r.stderr)
        self.assertIn("--prior-e E", cli("report", "--help").stdout)
        cli("report", "--db", self.db, "--out", html, "--bootstrap", "0", "--prior-e", "1.8",
            "--far-weight", "0.2", check=True)
        self.assertTrue(os.path.exists(html))

    def test_report_validates_against_the_written_prediction(self):
        xpj = os.path.join(self.d, "xp2.json")
        path = os.path.join(self.d, "large.yaml")
        cli(*self.xp, "--out", xpj, "--emit", "yaml", "--emit-out", path, "--set", "seed=7",
            check=True)
        cli("sweep", "launch", path, "--db", self.db, check=True)
        with open(xpj) as f:
            p = json.load(f)["predicted"]
        rj = os.path.join(self.d, "r.json")
        base = ["report", "--db", self.db, "--sweep", "sim", "--validate-sweep", "sim-large",
                "--bootstrap", "20", "--out", os.path.join(self.d, "r.html"), "--json", rj]
        r = cli(*base, "--expect", xpj, check=True)
        with open(rj) as f:
            rep = json.load(f)
        v = rep["validation"]
        self.assertEqual((v["predicted"], v["lo"], v["hi"]), (p["objective"], p["lo"], p["hi"]))
        self.assertEqual(v["prediction"], "expected")
        self.assertAlmostEqual(v["rel_error"], v["actual"] / p["objective"] - 1, places=12)
        self.assertEqual(v["inside"], p["lo"] <= v["actual"] <= p["hi"])
        self.assertAlmostEqual(v["cost"] / v["largest_fitted_cost"], 3, places=3)
        # the target compute came from the JSON
        with open(xpj) as f:
            self.assertEqual(rep["recommendation"]["compute"], json.load(f)["compute"])
        line = [l for l in r.stdout.splitlines() if l.startswith("validation:")]
        self.assertEqual(len(line), 1, r.stdout)
        self.assertIn("predicted %.4f [%.4f, %.4f] (90%%) before it ran" % (
            p["objective"], p["lo"], p["hi"]), line[0])
        self.assertIn("error %+.2f%%" % (100 * v["rel_error"]), line[0])
        # without --expect: the model at the run's own settings
        r = cli(*base, "--compute", "1e20", check=True)
        self.assertIn("at its own settings", r.stdout)
        with open(rj) as f:
            self.assertEqual(json.load(f)["validation"]["prediction"], "model")
        bad = os.path.join(self.d, "bad.json")
        with open(bad, "w") as f:
            f.write("{}")
        self.assertEqual(cli(*base, "--expect", bad).returncode, 1)


if __name__ == "__main__":
    unittest.main()
