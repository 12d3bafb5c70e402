"""The generate fuzz target's seeds still select the generator they were
written for. Its first byte picks psched_generator_at(byte % count), so a
generator registered before others (schedules/builtins.def) shifts every
seed after it to another generator, silently. Each seed's file name begins
with its generator's name ('-' written '_'); this test fails, naming the
seed, when the byte now selects another one."""
import os
import sys

import pipesched

CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fuzz", "corpus", "generate")


def main():
    names = [g.name for g in pipesched.schedules()]
    failures, seen = [], 0
    for seed in sorted(os.listdir(CORPUS)):
        with open(os.path.join(CORPUS, seed), "rb") as f:
            data = f.read()
        meant = [n for n in names
                 if seed == n.replace("-", "_") or seed.startswith(n.replace("-", "_") + "_")]
        if not meant:
            failures.append(f"{seed}: the name begins with no generator's name ({names})")
            continue
        meant = max(meant, key=len)  # interleaved_zb_x is interleaved-zb's, not interleaved's
        picked = names[data[0] % len(names)] if data else None
        seen += 1
        if picked != meant:
            failures.append(f"{seed}: written for {meant}, its first byte ({data[:1].hex()}) "
                            f"now selects {picked}; set it to {names.index(meant)}")
    if seen < 10:
        failures.append(f"only {seen} seeds read from {CORPUS}")
    for f in failures:
        print("FAIL " + f)
    print(f"{seen} seeds, {len(names)} generators")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
