"""test_demo_script.py -- the demo (examples/tiny-gpt-scaling/run.sh) glues its steps with the
CLI where the CLI can do it (issue 19 item 5): the naive fit reads the sweep with
`fit --db --sweep`, not a CSV converted by inline Python; the large run is written by
`extrapolate --emit yaml` (its own name, a fixed weights' seed and thread count) as a sweep of
fixed parameters only; the prediction is printed from extrapolate's text; the validation is
`report --validate-sweep --expect`; no Python at all."""

import os
import re
import unittest

import stutil

RUN_SH = os.path.join(stutil.ROOT, "examples", "tiny-gpt-scaling", "run.sh")


class TestDemoScript(unittest.TestCase):
    def test_fit_reads_the_sweep(self):
        with open(RUN_SH) as f:
            text = f.read()
        self.assertRegex(text, r'\$ST fit --db "\$DB" --sweep \$SW --law chinchilla')
        self.assertNotIn("runs.csv", text)
        # no inline Python block turns the export into a CSV any more
        self.assertIsNone(re.search(r'\$PY - "\$DIR/runs.json"', text))

    def text(self):
        with open(RUN_SH) as f:
            return f.read()

    def test_no_python(self):
        text = self.text()
        code = [l for l in text.splitlines() if not l.lstrip().startswith("#")]
        self.assertEqual([l for l in code if "python" in l.lower()], [])
        self.assertNotIn("$PY", text)
        self.assertNotIn("validation.json", text)

    def test_large_run_from_emit_yaml(self):
        text = self.text()
        self.assertRegex(text, r"--emit yaml --emit-out \"\$DIR/large.yaml\" --name \$SWL")
        self.assertIn('--set seed="$SEED_LARGE" --set threads="$THREADS"', text)
        # the large run is no heredoc any more, and nothing in the script is searched for show
        self.assertNotIn('cat > "$DIR/large.yaml"', text)
        self.assertNotIn("dummy", text)
        self.assertIn('$ST sweep launch "$DIR/large.yaml"', text)
        # the sweep passes the seed and the threads through fixed parameters (the trainer's
        # defaults: what the sweep trains is unchanged)
        self.assertIn('"--seed", "{seed}"', text)
        self.assertIn('"--threads", "{threads}"', text)
        self.assertRegex(text, r"(?m)^  seed: +\{value: 1337\}$")
        self.assertRegex(text, r"(?m)^  threads: +\{value: 1\}$")
        self.assertIn("SEED_LARGE=${E2E_SEED_LARGE:-1240}", text)

    def test_validation_by_report(self):
        text = self.text()
        self.assertRegex(text, r'\$ST report --db "\$DB" --sweep \$SW --validate-sweep \$SWL '
                               r'--expect "\$DIR/extrapolate.json"')
        self.assertIn('$ST sweep export --json --db "$DB" --sweep $SWL', text)
        self.assertIn("grep '^predicted ' \"$DIR/extrapolate.txt\"", text)

    def test_emit_yaml_options_exist(self):
        # what the script passes is what the CLI takes
        if not os.path.exists(stutil.CLI):
            self.skipTest("no CLI built")
        xp = stutil.run([stutil.CLI, "extrapolate", "--help"]).stdout
        for opt in ("--emit-out", "--set NAME=VALUE", "--digits", "--name"):
            self.assertIn(opt, xp)
        rp = stutil.run([stutil.CLI, "report", "--help"]).stdout
        self.assertIn("--expect", rp)

    def test_script_parses(self):
        stutil.run(["bash", "-n", RUN_SH])


if __name__ == "__main__":
    unittest.main()
