"""The small transformer that the profiler test (tests/torch/test_profile.py)
and the prediction benchmark (bench/predict.py) both run: an embedding,
pre-norm blocks (explicit softmax attention, GELU MLP) and a head
(LayerNorm + Linear to the vocabulary), float32, built after
torch.manual_seed(0) so every process builds the same weights."""
import math

HIDDEN, HEADS, FFN = 256, 4, 1024


def layers(vocab, blocks, fresh_embedding=False):
    """The model as a list of layers: embedding, `blocks` blocks, head.
    With fresh_embedding the embedding returns a new tensor, not a view:
    PyTorch's zero-bubble backward (stage_backward_input) detaches a
    stage's outputs in place, which a view refuses."""
    import torch

    class SelfAttention(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = torch.nn.Linear(HIDDEN, 3 * HIDDEN)
            self.proj = torch.nn.Linear(HIDDEN, HIDDEN)

        def forward(self, x):
            b, t, h = x.shape
            q, k, v = (z.view(b, t, HEADS, h // HEADS).transpose(1, 2)
                       for z in self.qkv(x).split(h, dim=-1))
            a = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(h // HEADS), dim=-1)
            return self.proj((a @ v).transpose(1, 2).reshape(b, t, h))

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.n1, self.n2 = torch.nn.LayerNorm(HIDDEN), torch.nn.LayerNorm(HIDDEN)
            self.attn = SelfAttention()
            self.mlp = torch.nn.Sequential(torch.nn.Linear(HIDDEN, FFN), torch.nn.GELU(),
                                           torch.nn.Linear(FFN, HIDDEN))

        def forward(self, x):
            x = x + self.attn(self.n1(x))
            return x + self.mlp(self.n2(x))

    class FreshEmbedding(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.table = torch.nn.Embedding(vocab, HIDDEN)

        def forward(self, ids):
            return self.table(ids).contiguous() * 1.0

    class Head(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = torch.nn.LayerNorm(HIDDEN)
            self.out = torch.nn.Linear(HIDDEN, vocab)

        def forward(self, x):
            return self.out(self.norm(x))

    torch.manual_seed(0)
    embedding = FreshEmbedding() if fresh_embedding else torch.nn.Embedding(vocab, HIDDEN)
    return [embedding] + [Block() for _ in range(blocks)] + [Head()]
