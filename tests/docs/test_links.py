"""The documentation stands on its own: every Markdown file of the
repository (README.md, docs/, the packages' READMEs) links only to files
that exist in the repository, to headings that exist in them, and cites
"section N" only of a document that has a heading numbered N. README.md
and docs/ do not point outside the repository (the specification's folder
beside it).

tests/vectors/ is left out: it is a copy of the specification's vectors,
README included, and tests/unit/test_vectors.c keeps it identical.

    test_links.py [ROOT]     (default: the checkout this file is in)
"""

import os
import re
import sys
import unittest

ROOT = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1
                       else os.path.join(os.path.dirname(__file__), "..", ".."))
SKIPPED_FOLDERS = {".git", "node_modules", "vectors"}
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
#  "section 3", "sections 3 to 6", "section 2.4", "(section 12)"
SECTION = re.compile(r"\b[Ss]ections? (\d+(?:\.\d+)*)((?:(?:,| and| to| or) \d+(?:\.\d+)*)*)")
#  The document a citation names just before it: "[protocol.md](protocol.md)
#  section 3", "`PROTOCOL.md` section 5", "docs/semantics.md section 4"
NAMED_BEFORE = re.compile(r"(?:\]\(([^)\s#]+\.md)[^)]*\)|([\w./-]+\.md)`?)\s*$")
#  Places outside the repository that README.md and docs/ must not send to
OUTSIDE = re.compile(r"\.\./shared|shared/spec|(?<![\w/.-])spec/")


def markdown_files(root):
    for folder, folders, files in os.walk(root):
        folders[:] = sorted(name for name in folders if name not in SKIPPED_FOLDERS
                            and not name.startswith("build"))
        for name in sorted(files):
            if name.endswith(".md"):
                yield os.path.join(folder, name)


def without_code_blocks(text):
    """The text with fenced code blocks blanked (line numbers kept):
    a '# comment' in a shell example is no heading."""
    lines, fenced = [], False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            lines.append("")
        else:
            lines.append("" if fenced else line)
    return "\n".join(lines)


def headings(path):
    with open(path, encoding="utf-8") as handle:
        return re.findall(r"(?m)^#{1,6} +(.+?) *#*$", without_code_blocks(handle.read()))


def slug(heading):
    """GitHub's anchor for a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def section_numbers(path):
    return {match.group(1) for match in
            (re.match(r"(\d+(?:\.\d+)*)\.? ", heading) for heading in headings(path)) if match}


def resolve(root, source, target):
    """The file target names from source (relative to source's folder, or
    else to the root), or None when there is none in the repository."""
    for base in (os.path.dirname(source), root):
        path = os.path.realpath(os.path.join(base, target))
        inside = path == root or path.startswith(root + os.sep)
        if inside and os.path.exists(path):
            return path
    return None


def problems(root, path):
    """What is wrong with the Markdown file at path: a list of strings."""
    root = os.path.realpath(root)
    with open(path, encoding="utf-8") as handle:
        text = without_code_blocks(handle.read())
    name = os.path.relpath(path, root)
    found = []
    for number, line in enumerate(text.split("\n"), 1):
        where = "%s:%d" % (name, number)
        for target in LINK.findall(line):
            if re.match(r"[a-z]+:", target):
                continue            # http:, https:, mailto:
            file_part, _, anchor = target.partition("#")
            linked = resolve(root, path, file_part) if file_part else os.path.realpath(path)
            if not linked:
                found.append("%s: links to %s, which is not in the repository" % (where, target))
            elif anchor and linked.endswith(".md") and \
                    anchor not in {slug(heading) for heading in headings(linked)}:
                found.append("%s: %s has no heading for #%s" % (where, file_part or name, anchor))
        if (name == "README.md" or name.startswith("docs" + os.sep)) and OUTSIDE.search(line):
            found.append("%s: points outside the repository: %s" % (where, line.strip()))
    #  Citations, on the text with its line breaks as spaces (offsets kept):
    #  "(PROTOCOL.md" at the end of one line and "section 2.1)" at the start
    #  of the next is one citation
    flat = text.replace("\n", " ")
    for match in SECTION.finditer(flat):
        where = "%s:%d" % (name, text.count("\n", 0, match.start()) + 1)
        named = NAMED_BEFORE.search(flat[max(0, match.start() - 300):match.start()])
        document = (named.group(1) or named.group(2)) if named else None
        cited = resolve(root, path, document) if document else os.path.realpath(path)
        if not cited:
            found.append("%s: cites %s of %s, which is not in the repository"
                         % (where, match.group(0), document))
            continue
        numbers = [match.group(1)] + re.findall(r"\d+(?:\.\d+)*", match.group(2))
        missing = [n for n in numbers if n not in section_numbers(cited)]
        if missing:
            found.append("%s: cites %s, but %s has no section %s"
                         % (where, match.group(0), os.path.relpath(cited, root),
                            ", ".join(missing)))
    return found


class CheckerTest(unittest.TestCase):
    """The checker finds what it is for (on a small tree of its own)."""

    def setUp(self):
        import tempfile
        import shutil
        self.root = os.path.realpath(tempfile.mkdtemp(prefix="actd-links-"))
        self.addCleanup(shutil.rmtree, self.root, True)
        os.mkdir(os.path.join(self.root, "docs"))
        self.write("docs/a.md", "# A\n\n## 1. One\n\n### 1.2 Sub part\n\n## 2. Two\n")

    def write(self, name, text):
        with open(os.path.join(self.root, name), "w", encoding="utf-8") as handle:
            handle.write(text)
        return os.path.join(self.root, name)

    def assert_problems(self, name, text, *expected):
        """The checker finds, in order, one problem per expected fragment."""
        found = problems(self.root, self.write(name, text))
        self.assertEqual(len(found), len(expected), found)
        for problem, fragment in zip(found, expected):
            self.assertIn(fragment, problem)

    def test_good_links_and_sections_pass(self):
        self.assert_problems("docs/b.md", "# B\n\n## 1. Only\n\nSee [a](a.md#12-sub-part), "
                             "[a.md](a.md) section 2, sections 1 to 1 here, [up](../docs/a.md).\n"
                             "```sh\n# not a heading, [x](missing.md)\n```\n")

    def test_missing_file_anchor_and_section_fail(self):
        self.assert_problems("docs/b.md", "# B\n\n## 1. Only\n\n[gone](gone.md), "
                             "[a](a.md#9-nine), see section 3, and [a.md](a.md) section 1.5.\n",
                             "links to gone.md", "no heading for #9-nine", "no section 3",
                             "docs/a.md has no section 1.5")

    def test_outside_the_repository_fails(self):
        self.assert_problems("README.md", "Spec in `../shared/spec/`, see [x](../outside.md);\n"
                             "`PROTOCOL.md` section 2.\n",
                             "links to ../outside.md", "points outside the repository",
                             "cites section 2 of PROTOCOL.md")

    def test_a_citation_across_a_line_break(self):
        self.assert_problems("docs/b.md", "# B\n\n## 1. Only\n\nAs it says (PROTOCOL.md\n"
                             "section 2.1), and [a.md](a.md)\nsection 1.5, and this\nsection 1.\n",
                             "b.md:6: cites section 2.1 of PROTOCOL.md",
                             "b.md:7: cites section 1.5, but docs/a.md has no section 1.5")


class RepositoryTest(unittest.TestCase):
    """The repository's own Markdown files."""

    def test_every_markdown_file(self):
        files = list(markdown_files(ROOT))
        for required in ("README.md", "docs/protocol.md", "docs/semantics.md"):
            self.assertIn(os.path.join(ROOT, required), files)
        found = [problem for path in files for problem in problems(ROOT, path)]
        self.assertEqual(found, [], "\n" + "\n".join(found))


if __name__ == "__main__":
    unittest.main(verbosity=2)
