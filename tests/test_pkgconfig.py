#!/usr/bin/env python3
"""The installed library as an out-of-tree consumer sees it.

Installs the build directory into a temporary DESTDIR, then builds
tests/pkgconfig_consumer.c (and the C++ wrapper test) with nothing but
`pkg-config --cflags --libs pipesched` pointed into that tree, and runs them
against the installed shared library.

Usage: test_pkgconfig.py --meson CMD --build-root DIR --source-root DIR
           --tool PATH/TO/pipesched --version X.Y.Z --cc CMD [--cc ARG ...]
           [--cxx CMD [--cxx ARG ...]]

Expected values: 1F1B at p=4, m=8 with unit costs has 2·p·m = 64 ops and
span (m + p - 1)·3 = 33; the hash must equal the one the in-tree tool
computes, since the hash is fixed within a soname.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

ARGS = None


def run(cmd, env=None, timeout=300):
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)


def find_file(root, name):
    """The one file called `name` under `root`: the libdir is not assumed
    (Debian installs to lib/<multiarch triplet>)."""
    hits = [os.path.join(d, name) for d, _, files in os.walk(root) if name in files]
    if len(hits) != 1:
        raise AssertionError(f"expected one {name} under {root}, found {hits}")
    return hits[0]


class InstalledTree(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="pipesched-destdir-")
        cls.destdir = cls.tmp.name
        r = run([*ARGS.meson, "install", "-C", ARGS.build_root, "--destdir", cls.destdir,
                 "--no-rebuild"])
        if r.returncode != 0:
            cls.tmp.cleanup()
            raise AssertionError(f"meson install failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
        cls.pc = find_file(cls.destdir, "pipesched.pc")
        cls.libdir = os.path.dirname(os.path.dirname(cls.pc))
        cls.env = dict(os.environ)
        cls.env["PKG_CONFIG_PATH"] = os.pathsep.join(
            [os.path.dirname(cls.pc)] + [p for p in [os.environ.get("PKG_CONFIG_PATH")] if p])
        # The .pc file names the final prefix (/usr/local/...); the sysroot
        # maps its -I and -L paths into the DESTDIR tree. --define-prefix
        # cannot: it assumes the .pc file sits in <prefix>/lib/pkgconfig.
        cls.env["PKG_CONFIG_SYSROOT_DIR"] = cls.destdir
        cls.run_env = dict(cls.env)
        # Only the installed libdir: meson test points LD_LIBRARY_PATH at the
        # build tree, which would hide a broken installed library.
        cls.run_env["LD_LIBRARY_PATH"] = cls.libdir

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def pkg_config(self, *args):
        r = run(["pkg-config", *args, "pipesched"], env=self.env)
        self.assertEqual(r.returncode, 0, f"pkg-config {args}: {r.stderr}")
        return r.stdout.split()

    def build(self, compiler, source, output, *extra):
        flags = self.pkg_config("--cflags", "--libs")
        exe = os.path.join(self.destdir, output)
        # Libraries after the source: the order a linker with --as-needed needs.
        cmd = [*compiler, *extra, source, "-o", exe, *flags]
        r = run(cmd, env=self.env)
        self.assertEqual(r.returncode, 0, f"{' '.join(cmd)}:\n{r.stdout}{r.stderr}")
        return exe

    def test_pc_file_lists_xxhash_as_private_requirement(self):
        with open(self.pc) as f:
            text = f.read()
        m = re.search(r"(?m)^Requires\.private:(.*)$", text)
        self.assertIsNotNone(m, text)
        self.assertIn("libxxhash", re.split(r"[\s,]+", m.group(1).strip()))
        self.assertRegex(text, r"(?m)^Version: " + re.escape(ARGS.version) + "$")

    def test_flags_point_into_the_installed_tree(self):
        flags = self.pkg_config("--cflags", "--libs")
        includes = [f[2:] for f in flags if f.startswith("-I")]
        self.assertTrue(any(os.path.isfile(os.path.join(d, "pipesched.h")) for d in includes),
                        flags)
        self.assertIn("-L" + self.libdir, flags)
        self.assertIn("-lpipesched", flags)

    def test_headers_are_installed_side_by_side(self):
        header = find_file(self.destdir, "pipesched.h")
        self.assertTrue(os.path.isfile(os.path.join(os.path.dirname(header), "pipesched.hpp")))

    def test_soname_is_libpipesched_so_1(self):
        lib = os.path.join(self.libdir, "libpipesched.so")
        self.assertTrue(os.path.exists(lib), f"no {lib}")
        self.assertTrue(os.path.exists(os.path.join(self.libdir, "libpipesched.so.1")))
        if shutil.which("readelf"):
            out = run(["readelf", "-d", lib]).stdout
            soname = re.search(r"\(SONAME\).*\[(.*)\]", out)
        elif shutil.which("objdump"):
            out = run(["objdump", "-p", lib]).stdout
            soname = re.search(r"^\s*SONAME\s+(\S+)", out, re.M)
        else:
            self.skipTest("neither readelf nor objdump is available")
        self.assertIsNotNone(soname, out)
        self.assertEqual(soname.group(1), "libpipesched.so.1")

    def test_c_consumer_builds_and_runs_against_the_installed_library(self):
        exe = self.build(ARGS.cc, os.path.join(ARGS.source_root, "tests", "pkgconfig_consumer.c"),
                         "consumer", "-std=c11", "-Wall", "-Wextra", "-Werror")
        if shutil.which("ldd"):
            ldd = run(["ldd", exe], env=self.run_env).stdout
            m = re.search(r"libpipesched\.so\.1 => (\S+)", ldd)
            self.assertIsNotNone(m, ldd)
            self.assertEqual(os.path.realpath(os.path.dirname(m.group(1))),
                             os.path.realpath(self.libdir))
        r = run([exe], env=self.run_env)
        self.assertEqual(r.returncode, 0, r.stderr)
        fields = dict(line.split(" ", 1) for line in r.stdout.splitlines())
        self.assertEqual(fields["version"], ARGS.version)
        self.assertEqual(fields["ops"], "64")
        self.assertEqual(fields["span"], "33")
        tool = run([ARGS.tool, "simulate", "--schedule", "1f1b", "--devices", "4",
                    "--microbatches", "8", "--json"])
        self.assertEqual(tool.returncode, 0, tool.stderr)
        self.assertEqual(fields["hash"], json.loads(tool.stdout)["hash"])

    def test_cpp_wrapper_builds_and_runs_against_the_installed_library(self):
        if not ARGS.cxx:
            self.skipTest("no C++ compiler")
        # testutil.h is the test harness, not part of the library.
        exe = self.build(ARGS.cxx, os.path.join(ARGS.source_root, "tests", "test_cpp.cpp"),
                         "cpp-consumer", "-std=c++17", "-Wall", "-Wextra", "-Werror",
                         "-I" + os.path.join(ARGS.source_root, "tests"))
        r = run([exe], env=self.run_env)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertNotIn("not ok", r.stdout)


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--meson", action="append", required=True)
    ap.add_argument("--build-root", required=True)
    ap.add_argument("--source-root", required=True)
    ap.add_argument("--tool", required=True)
    ap.add_argument("--version", required=True)
    ap.add_argument("--cc", action="append", required=True)
    ap.add_argument("--cxx", action="append", default=[])
    ARGS, rest = ap.parse_known_args()
    if not shutil.which("pkg-config"):
        print("pkg-config is not installed: skipped")
        sys.exit(77)
    unittest.main(argv=[sys.argv[0], "-v", *rest], verbosity=2)


if __name__ == "__main__":
    main()
