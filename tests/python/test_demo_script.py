"""test_demo_script.py -- the demo (examples/tiny-gpt-scaling/run.sh) glues its steps with the
CLI where the CLI can do it (issue 19 item 5): the naive fit reads the sweep with
`fit --db --sweep`, not a CSV converted by inline Python."""

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


if __name__ == "__main__":
    unittest.main()
