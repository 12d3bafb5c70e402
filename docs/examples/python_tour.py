"""The Python page's tour (docs/python.md): every statement runs in the test
suite (tests/test_python.py, TestDocs), so the page cannot drift."""
import pathlib
import pickle
import tempfile

import pipesched

print(pipesched.__version__, pipesched.library_path())

# A plan needs devices and micro-batches; everything else has a default.
plan = pipesched.Plan(devices=4, microbatches=8, cost=(1, 2, 1))

# One schedule, three spellings: Python's (name, plan), keywords, and the
# C / C++ order (plan, name). A Plan and a str are told apart by type.
s = pipesched.generate("zb-h1", plan)
assert s == pipesched.generate(name="zb-h1", plan=plan) == pipesched.generate(plan, "zb-h1")

report = s.simulate()
print("makespan", report.makespan, "bubble", round(report.bubble_ratio, 3))

# Equality is by content: the same order and plan, however it was made.
csv = s.to_csv()
assert pipesched.from_csv(csv, plan) == s            # text (str)
assert pipesched.from_csv(csv.encode(), plan) == s   # bytes
with tempfile.TemporaryDirectory() as tmp:
    path = pathlib.Path(tmp, "zb-h1.csv")
    path.write_text(csv)
    assert pipesched.from_csv(path, plan) == s        # a path: os.PathLike only

# Schedules pickle, e.g. for torch.distributed.broadcast_object_list.
copy = pickle.loads(pickle.dumps(s))
assert copy == s and copy.name == "zb-h1" and hash(copy) == hash(s)

# Handles free at once with close() or a with block.
with pipesched.generate("1f1b", devices=2, microbatches=4) as small:
    print(small.to_pytorch_actions()[0])

# Bad arguments fail in Python, naming the parameter.
try:
    pipesched.Plan(devices=-1, microbatches=8)
except ValueError as e:
    print(e)        # devices (-1) must be between 0 and 4294967295
