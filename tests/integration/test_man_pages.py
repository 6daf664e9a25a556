"""The man pages against the programs they describe: workers/exec/actd-exec.1,
workers/c/actd-example-worker.1, daemon/man/actctl.1, actd.8 and actd-http.8.

A page is written by hand, away from the C source whose options it
describes; the --help text is printed by the program itself, so it is the
program's own word on what it takes. For each page:

- every long option its program's --help text names has an entry in the
  page's OPTIONS (a .TP tag), and the short forms of those entries are
  the ones --help pairs with the same long options ("-a, --activity"):
  an option added to the program and not to its page fails;
- every option the page names outside its EXAMPLE(S) (as \\-\\-name, the
  troff for --name) is one --help names, or --help itself, which the test
  has just run: an option the program dropped, or never had, fails;
- every page renders with man -l (groff -man when man is not installed;
  scripts/deps.sh installs both) without a warning on stderr.

Run: ACTD_BIN=build-x/bin/actd /usr/bin/python3 -m unittest -v test_man_pages
"""

import os
import re
import shutil
import subprocess
import unittest

from harness import ROOT, find_binary

#  A long option in a --help text, and a short one paired with it there
HELP_LONG = re.compile(r"(?<![\w-])--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)")
HELP_PAIR = re.compile(r"(?<![\w-])-([A-Za-z0-9]), --([a-z][a-z0-9]*(?:-[a-z0-9]+)*)")
#  A long option in troff, \-\-name (\- is a minus: what a shell takes)
PAGE_LONG = re.compile(r"\\-\\-([a-z](?:[a-z0-9]|\\-)*)")
#  A long option written with bare hyphens, which troff may render as
#  hyphens (U+2010) that no shell takes
PAGE_BARE = re.compile(r"(?<![\w\\-])--[a-z][a-z0-9-]*")
PAGE_SHORT = re.compile(r"\\-([A-Za-z0-9])(?![A-Za-z0-9])")


def help_text(program):
    """What program --help prints: it must exit 0 and print on stdout."""
    done = subprocess.run([find_binary(program), "--help"], capture_output=True, text=True,
                          timeout=60, env=dict(os.environ, ASAN_OPTIONS="detect_leaks=1"))
    if done.returncode != 0 or not done.stdout.strip():
        raise AssertionError("%s --help exited %d, printing %r on stdout and %r on stderr"
                             % (program, done.returncode, done.stdout, done.stderr))
    return done.stdout


def page_sections(path):
    """The page's sections: {name: [lines]}, comments left out. Lines before
    the first .SH (.TH and the like) are under ""."""
    sections = {"": []}
    name = ""
    with open(path, encoding="utf-8") as handle:
        for line in handle.read().splitlines():
            if line.startswith('.\\"'):
                continue
            line = line.split('\\"')[0]
            if line.startswith(".SH"):
                name = line[3:].strip().strip('"')
                sections[name] = []
            else:
                sections[name].append(line)
    return sections


def troff_longs(text):
    """The long options (without --) written as \\-\\-name in troff text."""
    return {name.replace("\\-", "-") for name in PAGE_LONG.findall(text)}


def option_tags(sections):
    """The tags of the OPTIONS section: the line after each .TP."""
    lines = sections.get("OPTIONS", [])
    return [lines[at + 1] for at, line in enumerate(lines[:-1]) if line.startswith(".TP")]


def tag_pairs(tags):
    """(short, long) for each tag with a short option: long is None unless
    the tag names exactly one long option beside it."""
    pairs = set()
    for tag in tags:
        longs = troff_longs(tag)
        shorts = PAGE_SHORT.findall(PAGE_LONG.sub("", tag))
        for short in shorts:
            pairs.add((short, longs.pop() if len(longs) == 1 and len(shorts) == 1 else None))
    return pairs


class PageChecks:
    """The checks of one page: PROGRAM's --help text against PAGE. A mixin:
    each page is a TestCase of its own, so that a failure names it."""

    PROGRAM = None              #  The program's file name in the build's bin/
    PAGE = None                 #  The page, from the top of the repository

    def setUp(self):
        self.path = os.path.join(ROOT, self.PAGE)
        self.help = help_text(self.PROGRAM)
        self.sections = page_sections(self.path)
        self.help_longs = set(HELP_LONG.findall(self.help))
        self.assertTrue(self.help_longs, "%s --help names no option:\n%s"
                        % (self.PROGRAM, self.help))

    def test_every_option_of_help_has_an_entry(self):
        """Each long option of --help is a tag of OPTIONS; a short form --help
        pairs with one is paired with it there, and the page pairs no other."""
        tags = option_tags(self.sections)
        self.assertTrue(tags, "%s has no OPTIONS entries" % self.PAGE)
        documented = set().union(*(troff_longs(tag) for tag in tags))
        missing = sorted(self.help_longs - documented)
        self.assertEqual(missing, [], "%s --help names options that %s's OPTIONS does not "
                         "document" % (self.PROGRAM, self.PAGE))
        self.assertEqual(sorted(tag_pairs(tags), key=str),
                         sorted(HELP_PAIR.findall(self.help), key=str),
                         "short options of %s's OPTIONS (short, long) against %s --help"
                         % (self.PAGE, self.PROGRAM))

    def test_every_option_of_the_page_is_the_programs(self):
        """Each \\-\\-name of the page outside its examples (which may show
        other programs, actctl's --wait) is an option --help names, or
        --help; none is written with bare hyphens."""
        text = "\n".join(line for name, lines in self.sections.items()
                         if name not in ("EXAMPLE", "EXAMPLES") for line in lines)
        named = troff_longs(text)
        self.assertTrue(named, "%s names no option" % self.PAGE)
        unknown = sorted(named - self.help_longs - {"help"})
        self.assertEqual(unknown, [], "%s documents options that %s --help does not name"
                         % (self.PAGE, self.PROGRAM))
        whole = "\n".join(line for lines in self.sections.values() for line in lines)
        self.assertEqual(PAGE_BARE.findall(whole), [],
                         "%s: write options as \\-\\-name" % self.PAGE)

    def test_renders_without_a_warning(self):
        """man -l (all of groff's warnings on: --warnings=w) renders the page,
        its NAME line and every section included, with nothing on stderr: a
        bad macro, an unknown escape or a line that cannot be broken at 80
        columns would say so there."""
        if shutil.which("man"):
            command = ["man", "-l", "--warnings=w", self.path]
        elif shutil.which("groff"):
            #  (-P-cbou: plain text, no bold or underline, as man prints
            #  to a pipe)
            command = ["groff", "-man", "-Tutf8", "-ww", "-P-cbou", self.path]
        else:
            self.fail("neither man (man-db) nor groff (groff-base) is installed: "
                      "scripts/deps.sh test installs them")
        env = dict(os.environ, LC_ALL="C.UTF-8", MANWIDTH="80", MANPAGER="cat", PAGER="cat")
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, env=env)
        self.assertEqual((done.returncode, done.stderr), (0, ""), command)
        self.assertTrue(re.search(r"\nNAME\n +%s - \w" % re.escape(self.PROGRAM), done.stdout),
                        "%s: no NAME line \"%s - ...\" in its rendering"
                        % (self.PAGE, self.PROGRAM))
        #  Each section of the source is a heading of the rendering
        for name in self.sections:
            if name:
                self.assertIn("\n%s\n" % name, done.stdout, self.PAGE)


@unittest.skipUnless(os.path.exists(os.path.join(ROOT, "workers", "exec", "CMakeLists.txt")),
                     "workers/exec/ is not here, and actd-exec is not built")
class ActdExecPage(PageChecks, unittest.TestCase):
    PROGRAM = "actd-exec"
    PAGE = "workers/exec/actd-exec.1"


class ExampleWorkerPage(PageChecks, unittest.TestCase):
    PROGRAM = "actd-example-worker"
    PAGE = "workers/c/actd-example-worker.1"


class ActctlPage(PageChecks, unittest.TestCase):
    PROGRAM = "actctl"
    PAGE = "daemon/man/actctl.1"


class ActdPage(PageChecks, unittest.TestCase):
    PROGRAM = "actd"
    PAGE = "daemon/man/actd.8"


class ActdHttpPage(PageChecks, unittest.TestCase):
    PROGRAM = "actd-http"
    PAGE = "daemon/man/actd-http.8"


if __name__ == "__main__":
    unittest.main()
