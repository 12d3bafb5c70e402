"""Getting started in Python: generate, simulate, PyTorch actions, an SVG."""
import pipesched

s = pipesched.generate("zb-h1", pipesched.Plan(devices=4, microbatches=8))
print("span", s.simulate().span, s.to_pytorch_actions()[0][:6])
with open("zb-h1.svg", "w") as f:
    f.write(s.to_svg())
