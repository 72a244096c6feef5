"""test_cli_defaults.py -- the interval defaults agree across commands (issue 19 item 7): fit,
extrapolate and report draw 200 bootstrap replicates at level 0.9 unless told otherwise, and
say so in their --help; fit isoflop keeps the 95% of the published intervals it is checked
against (docs/cli/fit.md)."""

import json
import os
import re
import unittest

import stutil

CSV = os.path.join(stutil.ROOT, "tests", "data", "scaling", "chinchilla_svg_extracted_data.csv")


def cli(*args):
    return stutil.run([stutil.CLI] + list(args), check=True)


@unittest.skipUnless(os.path.exists(stutil.CLI), "no scaletune CLI in the build directory")
class TestCliDefaults(unittest.TestCase):
    def test_help_says_200_and_0_9(self):
        for cmd in ("fit", "extrapolate", "report"):
            text = cli(cmd, "--help").stdout
            self.assertRegex(text, r"--bootstrap \S+ +[^\n]*\(default 200", cmd)
            self.assertRegex(text, r"--level L +[^\n]*\(default 0\.9\)", cmd)
        self.assertRegex(cli("fit", "isoflop", "--help").stdout, r"--level L .*default 0\.95")

    def test_fit_bootstraps_by_default(self):
        r = cli("fit", "--data", CSV, "--columns", "N=Model Size,C=Training FLOP", "--law",
                "chinchilla", "--threads", "2", "--json")
        js = json.loads(r.stdout)
        self.assertEqual(js["bootstrap"], {"replicates": 200, "seed": 42, "level": 0.9})
        r = cli("fit", "--data", CSV, "--columns", "N=Model Size,C=Training FLOP", "--law",
                "chinchilla", "--threads", "2", "--bootstrap", "0", "--json")
        self.assertNotIn("bootstrap", json.loads(r.stdout))


if __name__ == "__main__":
    unittest.main()
