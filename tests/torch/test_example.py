"""The guide's example (docs/examples/pytorch_pipeline.py, docs/pytorch.md)
runs every listed schedule with both lowerings on 2 processes and matches
the non-pipelined step. argv: the example's path. Exit 77 (skip) where
torch is absent, a failure under CI=true."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


def main():
    harness.require_torch()
    # `import pipesched` alone never imports torch (only pipesched.torch does).
    probe = subprocess.run([sys.executable, "-c", "import sys, pipesched; pipesched.version(); "
                            "sys.exit(1 if 'torch' in sys.modules else 0)"], timeout=120)
    if probe.returncode != 0:
        print("FAIL: import pipesched imported torch")
        return 1
    out = subprocess.run([sys.executable, sys.argv[1], "--devices", "2"], capture_output=True,
                         text=True, timeout=600)
    sys.stdout.write(out.stdout)
    lines = [ln for ln in out.stdout.splitlines() if " p=2 " in ln]
    # 12 schedules x 2 lowerings, each line ending "ok".
    if out.returncode != 0 or len(lines) != 24 or not all(ln.endswith(" ok") for ln in lines):
        sys.stdout.write(out.stderr[-4000:])
        print(f"FAIL: exit {out.returncode}, {len(lines)} result lines (want 24, all ok)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
