"""bench/checks.py - what the target-checking scripts of bench/ (ratios.py,
linear_targets.py) share: a tally of checks printed in sections.

    t = Tally()
    t.section("title [target]", ["row ... " + t.verdict(x <= 1.2)], "what is missing")
    return 1 if t.missed else 0

verdict(ok) returns "meets" or "MISSES" and counts the misses; section()
prints the title, then each line indented, or, when there are none, the
`missing` text in the form the caller picked ("(needs X)" or "not measured:
X"). Standard library only.
"""


class Tally:
    def __init__(self, missing_format="(needs %s)"):
        self.missed = 0
        self.missing_format = missing_format

    def verdict(self, ok):
        self.missed += not ok
        return "meets" if ok else "MISSES"

    def section(self, title, lines, missing):
        print("\n" + title)
        for line in lines or [self.missing_format % missing]:
            print("  " + line)
