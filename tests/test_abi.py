#!/usr/bin/env python3
"""ABI tests of libpipesched (docs/abi.md).

Usage: test_abi.py --check=baseline|symbols --library=LIB --include=DIR
                   --map=pipesched.map --baseline=pipesched.abi --soname=NAME

--check=baseline compares the built library with the committed abidw
baseline: any incompatible change (abidiff bits ABIDIFF_ERROR and
ABIDIFF_ABI_INCOMPATIBLE_CHANGE) or any change to an existing interface
fails; additions pass only when every added symbol sits in a version node
other than PIPESCHED_1.0.

--check=symbols pins the dynamic symbol table: the library exports exactly
the functions the public header declares PSCHED_API, all named psched_*,
each bound to a version node of the map file, and its soname.

Exits 77 (meson's skip) when abidiff or binutils are missing, or when the
library cannot be compared (no debug information, another architecture).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import unittest
import xml.etree.ElementTree as ET

SKIP = 77
OPTS = None

# abidiff exit status bits (libabigail's abidiff_status).
ABIDIFF_ERROR = 1
ABIDIFF_USAGE_ERROR = 2
ABIDIFF_ABI_CHANGE = 4
ABIDIFF_ABI_INCOMPATIBLE_CHANGE = 8

FIRST_NODE = "PIPESCHED_1.0"
REGENERATE = ("tools/update-abi-baseline.sh BUILD_DIR regenerates the baseline after "
              "API was added (never after it was changed; see docs/abi.md)")


def run(*cmd):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def dynamic_symbols(library):
    """{name: (nm type, version)} of the defined dynamic symbols, without
    the absolute symbols that name the version nodes themselves."""
    r = run("nm", "-D", "--defined-only", "--with-symbol-versions", library)
    if r.returncode != 0:
        raise RuntimeError(f"nm -D {library}: {r.stderr.strip()}")
    symbols = {}
    for line in r.stdout.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        kind, name = fields[1], fields[2]
        name, _, version = name.partition("@")
        version = version.lstrip("@")
        if kind == "A" and not version and re.fullmatch(r"PIPESCHED_[0-9]+\.[0-9]+", name):
            continue
        symbols[name] = (kind, version)
    return symbols


def header_functions(include_dir):
    """Names of the functions pipesched.h declares PSCHED_API."""
    with open(os.path.join(include_dir, "pipesched.h"), encoding="utf-8") as f:
        text = f.read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"#define PSCHED_API.*", " ", text)
    return set(re.findall(r"\bPSCHED_API\b[^;{(]*?\b(psched_\w+)\s*\(", text))


def map_nodes(map_path):
    with open(map_path, encoding="utf-8") as f:
        text = re.sub(r"#.*", "", f.read())
    return re.findall(r"^\s*(PIPESCHED_[0-9]+\.[0-9]+)\s*\{", text, flags=re.M)


def baseline_symbols(baseline):
    root = ET.parse(baseline).getroot()
    return {e.get("name") for e in root.iter("elf-symbol")}


class TestBaseline(unittest.TestCase):
    def abidiff(self, *extra):
        cmd = ["abidiff", *extra, "--drop-private-types", "--headers-dir2", OPTS.include]
        suppressions = os.path.splitext(OPTS.baseline)[0] + ".abignore"
        if os.path.exists(suppressions):
            cmd += ["--suppressions", suppressions]
        return run(*cmd, OPTS.baseline, OPTS.library)

    def test_no_incompatible_change_against_the_baseline(self):
        r = self.abidiff()
        bad = ABIDIFF_ERROR | ABIDIFF_USAGE_ERROR | ABIDIFF_ABI_INCOMPATIBLE_CHANGE
        self.assertEqual(r.returncode & bad, 0,
                         f"abidiff exit {r.returncode}: incompatible ABI change\n"
                         f"{r.stdout}{r.stderr}")

    def test_existing_interfaces_are_unchanged(self):
        # Type changes (a parameter's type, a struct's layout, an
        # enumerator's value) are only ABIDIFF_ABI_CHANGE; hiding the
        # additions leaves exactly the changes to what already existed.
        r = self.abidiff("--no-added-syms")
        self.assertEqual(r.returncode, 0,
                         f"abidiff exit {r.returncode}: an existing interface changed\n"
                         f"{r.stdout}{r.stderr}")

    def test_added_symbols_are_in_a_new_version_node(self):
        known = baseline_symbols(OPTS.baseline)
        added = {name: version for name, (_, version) in dynamic_symbols(OPTS.library).items()
                 if name not in known}
        in_first = sorted(name for name, version in added.items() if version == FIRST_NODE)
        self.assertEqual(in_first, [],
                         f"symbols added since the baseline are in {FIRST_NODE}; put them in "
                         f"a new node of lib/pipesched.map (PIPESCHED_1.1 ...). "
                         f"{REGENERATE}")

    def test_baseline_public_types_carry_their_header(self):
        # abidiff ignores changes to types it cannot place in a public
        # header: a baseline written without locations hides them all.
        root = ET.parse(OPTS.baseline).getroot()
        files = {e.get("filepath") for e in root.iter("class-decl")
                 if e.get("name") in ("psched_op", "psched_generator")}
        self.assertEqual(files, {"pipesched.h"})

    def test_baseline_is_of_this_soname(self):
        root = ET.parse(OPTS.baseline).getroot()
        self.assertEqual(root.get("soname"), OPTS.soname)


class TestSymbols(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.exported = dynamic_symbols(OPTS.library)
        cls.declared = header_functions(OPTS.include)

    def test_header_declares_the_api(self):
        # Guards the regex: a parse that found nothing would pass the rest.
        for name in ("psched_plan_create", "psched_generate", "psched_fail",
                     "psched_schedule_hash", "psched_import_csv"):
            self.assertIn(name, self.declared)

    def test_every_export_is_named_psched(self):
        self.assertEqual(sorted(n for n in self.exported if not n.startswith("psched_")), [])

    def test_every_header_function_is_exported(self):
        self.assertEqual(sorted(self.declared - set(self.exported)), [])

    def test_every_export_is_declared_in_the_header(self):
        # Internal helpers (psched__*) match the map's psched_* pattern; only
        # -fvisibility=hidden keeps them out.
        self.assertEqual(sorted(set(self.exported) - self.declared), [])

    def test_every_export_has_a_version_node_of_the_map(self):
        nodes = map_nodes(OPTS.map)
        self.assertIn(FIRST_NODE, nodes)
        stray = sorted(f"{n}@{v or '(none)'}" for n, (_, v) in self.exported.items()
                       if v not in nodes)
        self.assertEqual(stray, [])

    def test_soname_is_libpipesched_so_1(self):
        r = run("readelf", "-d", OPTS.library)
        self.assertEqual(r.returncode, 0, r.stderr)
        sonames = re.findall(r"\(SONAME\)\s+Library soname: \[([^\]]+)\]", r.stdout)
        self.assertEqual(sonames, [OPTS.soname])
        self.assertEqual(OPTS.soname, "libpipesched.so.1")


def skip(reason):
    print(f"skipped: {reason}")
    sys.exit(SKIP)


def architecture(library):
    """libabigail's name of the library's architecture ("elf-amd-x86_64")."""
    r = run("abidw", "--no-corpus-path", "--no-show-locs", "--exported-interfaces-only", library)
    m = re.search(r"architecture='([^']*)'", r.stdout)
    return m.group(1) if m else None


def check_can_compare():
    if not shutil.which("abidiff") or not shutil.which("abidw"):
        skip("abidiff/abidw (libabigail) not installed")
    r = run("readelf", "-S", OPTS.library)
    if ".debug_info" not in r.stdout:
        skip(f"{OPTS.library} has no debug information (build with -g)")
    want = ET.parse(OPTS.baseline).getroot().get("architecture")
    have = architecture(OPTS.library)
    if have != want:
        skip(f"the baseline describes {want}, this library is {have}")


def main():
    global OPTS
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", choices=("baseline", "symbols"), required=True)
    for name in ("library", "include", "map", "baseline", "soname"):
        parser.add_argument("--" + name, required=True)
    OPTS = parser.parse_args()
    if not shutil.which("nm") or not shutil.which("readelf"):
        skip("nm/readelf (binutils) not installed")
    if OPTS.check == "baseline":
        check_can_compare()
    case = TestBaseline if OPTS.check == "baseline" else TestSymbols
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(case)
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    sys.exit(0 if result.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
