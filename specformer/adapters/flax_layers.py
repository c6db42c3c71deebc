"""Flax's own layers (``flax.nnx``) behind the protocol, taking and answering with JAX arrays.

The adapter declares ``Capabilities(arrays="jax")``: its worker hands it every tensor as a
``jax.Array`` and every dtype as the ``jnp`` dtype, and takes its JAX answers back
(:mod:`specformer.runner.arrays`). ``jax_enable_x64`` is switched on at import, so that
float64 rows stay float64 (and int64 token ids and positions stay int64).

Each operation builds the Flax modules a user would, with the protocol's weights as their
parameters, and runs them under ``jax.jit``: the module is created abstractly inside the
jitted function (``nnx.eval_shape``), its parameters replaced by the given arrays
(``nnx.split``, ``nnx.replace_by_pure_dict``, ``nnx.merge``: Flax's functional API) and
called. Flax's kernels are ``(d_in, d_out)`` and multiply on the right, as the protocol's
matrices do; a ``MultiHeadAttention`` kernel is the protocol's matrix reshaped per head
(``W^Q (d_model, h d_k)`` as ``(d_model, h, d_k)``, ``W^O (h d_v, d_model)`` as
``(h, d_v, d_model)``, head ``i`` owning columns ``i d_k : (i+1) d_k`` in both), so every
weight is loaded by a reshape of its own, never a transpose.

* ``attention``: ``nnx.dot_product_attention`` on one head (a head axis of 1 inserted),
  with ``module=`` a module to *sow* into (the way ``MultiHeadAttention(sow_weights=True)``
  exposes them), run under ``nnx.capture(..., nnx.Intermediate)``: Flax then computes the
  weights with ``dot_product_attention_weights`` and the output from the same weights, in
  the inputs' dtype, and the weights are the captured ``attention_weights``. The protocol's
  mask (True = may attend) is Flax's; causal is ``is_causal=True`` (``tril`` of a
  ``(t_q, t_k)`` matrix: top-left aligned). Leading axes of ``q`` (``(B, h, t, d)``) are
  batch axes. ``d_v`` may differ from ``d_k`` on this path only: without ``module=``,
  ``nnx.dot_product_attention`` hands over to ``jax.nn.dot_product_attention``, which refuses
  ``d_v != d_k`` (a ValueError) and computes its softmax in float32.
* ``multihead_attention``: ``nnx.MultiHeadAttention(h, d_model, qkv_features=h d_k,
  out_features=d_model, use_bias=False)`` with its default ``attention_fn``
  (``nnx.dot_product_attention`` without a module, which calls
  ``jax.nn.dot_product_attention``); the mask gets a head axis, ``causal`` is ``is_causal``.
  Flax's module has one width for queries, keys and values (``qkv_features``): it declares
  ``value_width`` and ``key_width`` ``d_model_over_h``; key and value may come from
  different sequences (``separate_key_value``).
* ``layer_norm``: ``nnx.LayerNorm(d, epsilon=eps)`` with ``scale = gamma``, ``bias = beta``
  (its defaults otherwise: ``use_fast_variance=True``, statistics in at least float32).
* ``feed_forward``: two ``nnx.Linear`` layers around ``nnx.relu``, ``nnx.gelu(approximate=False)``
  (``"gelu"``) or ``nnx.gelu(approximate=True)`` (``"gelu_tanh"``, ``nnx.gelu``'s default).
* ``encoder_layer``, ``decoder_layer``, ``encoder_stack``: Flax has no transformer layer. As
  a Flax user does, the adapter composes one from Flax's layers (:class:`EncoderLayer`,
  :class:`DecoderLayer`, :class:`EncoderStack` below): ``nnx.MultiHeadAttention`` with
  biases (self-attention, ``is_causal`` for a causal or decoder layer; cross-attention on
  ``memory``), ``nnx.LayerNorm`` and the feed-forward module above, in the protocol's post-
  or pre-norm order (``norm_first``), the stack's layers in an ``nnx.List`` and its final
  norm an ``nnx.LayerNorm``. These rows check Flax's layers in a composition written here:
  the residual sums and the order are this module's, every product, softmax and norm Flax's.
* ``count_parameters``: the same composition for a whole model, built with ``nnx.eval_shape``
  (no memory): ``nnx.Embed`` tables (tokens, a second one for an unshared target, learned
  positions, token types), an ``nnx.LayerNorm`` after the input sum and after each stack
  when asked, the output an ``nnx.Linear(d, V, use_bias=False)``, or ``Embed.attend`` (no
  parameters) when tied; the ``nnx.Param`` leaves of its state are counted. It declares the
  ``encoder-decoder`` layout.
* ``learned_positions``: ``nnx.Embed(n_max, d)`` holding the table, called on the positions;
  ``input_embedding``: two ``nnx.Embed`` (tokens, positions ``0 .. t-1``) and their sum, the
  token rows times ``sqrt(d_model)`` when ``scale``.
* ``embedding_lookup``: ``nnx.Embed(V, d)`` called on the ids; ``tied_logits``: the same
  module's ``attend`` (Flax's weight-tied output, ``hidden @ embedding^T``);
  ``lookup_gradient``: ``nnx.grad`` of ``sum(embed(ids) * upstream)`` with respect to the
  module's ``embedding``.

Not covered (Flax has no layer for them): score functions, sinusoidal or binary encodings,
rotary embeddings, ALiBi, cosine similarity and the word2vec, GloVe and FastText parts;
``embedding_init`` is not offered either (``nnx.Embed`` starts from a variance-scaled normal,
not the standard normal the protocol describes). Dropout is off everywhere (rate 0).

What the rows show about Flax rather than about this adapter is listed in
``deviations.toml``: ``nnx.Embed`` never refuses a position past its table (JAX's gather
fills NaN rows there and wraps negative positions around); ``jax.nn.dot_product_attention``,
which ``MultiHeadAttention`` calls, computes the softmax in float32 whatever the inputs'
dtype; masked scores are set to a large finite negative number, so a fully masked row gets
uniform weights. XLA takes a mean as the sum times a rounded ``1/d``: a convention the adapter
declares (``layer_norm_mean``), under which a constant token's LayerNorm may miss ``beta`` by that
rounding, as on CUDA. Flax's attention is invisible to PyTorch's FLOP counter: the cost
properties find 0 FLOPs and end not applicable, as for any fused kernel.

Every call of a new shape (or a new static setting: heads, eps, activation, causal...)
compiles anew, as ``jax.jit`` does for any user; repeated shapes are served from JAX's cache.
Since the suite draws new shapes for almost every example, the adapter bounds that cache: past
:data:`MAX_COMPILED` programs it clears JAX's caches (:func:`release_compiled`), so that a worker
serving hundreds of rows does not grow by gigabytes of compiled code. JAX's persistent compilation
cache is on (:func:`use_persistent_cache`): a program compiled by one worker or run is loaded, not
compiled again, by the next.
"""

from __future__ import annotations

import ctypes
import gc
import math
import os
from functools import partial, wraps
from typing import Any, Callable

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # share a GPU with torch in the worker

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from flax import nnx  # noqa: E402

from specformer.protocol import Capabilities, NotApplicable  # noqa: E402
from specformer.protocol.attention import AttentionOutput  # noqa: E402

jax.config.update("jax_enable_x64", True)

#: Where JAX keeps compiled programs between processes and runs, unless the user set a folder of their own
#: (``JAX_COMPILATION_CACHE_DIR``): ``SPECFORMER_JAX_CACHE`` names another folder, or ``off``.
JAX_CACHE_ENV = "SPECFORMER_JAX_CACHE"
#: The most the persistent cache holds on disk (JAX evicts the least recently used programs past it).
JAX_CACHE_BYTES = 512 * 2**20


def _cpu_fingerprint() -> str:
    """A short digest of this machine's CPU and its instruction-set flags: a program compiled for one CPU is
    never loaded on another that shares the folder (a home folder on a network disk)."""
    import hashlib
    import platform

    flags = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            flags = next((line for line in info if line.startswith(("flags", "Features"))), "")
    except OSError:
        pass
    return hashlib.sha256(f"{platform.machine()} {platform.processor()} {flags}".encode()).hexdigest()[:12]


def use_persistent_cache() -> str | None:
    """Turn on JAX's persistent compilation cache, as JAX's documentation advises for programs that compile
    the same functions in many processes; the folder used, or None (off, or the user's own setting kept).

    Each worker process, and each run, would otherwise compile every shape anew: with the folder shared,
    a program compiled once is loaded by every later worker, row and run (measured: the encoder topic's
    15 rows took 164 s with no cache, 128 s with an empty one, 39 s with a filled one). The folder is
    ``$XDG_CACHE_HOME/specformer`` (else ``~/.cache/specformer``), per JAX version and CPU; a folder that
    cannot be made leaves the cache off. The answers do not change: a loaded program is the one compiled.
    """
    chosen = os.environ.get(JAX_CACHE_ENV, "")
    if chosen.lower() == "off" or os.environ.get("JAX_COMPILATION_CACHE_DIR") \
            or jax.config.jax_compilation_cache_dir:
        return None
    if not chosen:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        chosen = os.path.join(base, "specformer", f"jax-{jax.__version__}-{_cpu_fingerprint()}")
    try:
        os.makedirs(chosen, exist_ok=True)
    except OSError:
        return None
    jax.config.update("jax_compilation_cache_dir", chosen)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    jax.config.update("jax_compilation_cache_max_size", JAX_CACHE_BYTES)
    return chosen


use_persistent_cache()

#: The feed-forward non-linearities, by the protocol's names (module constants: a jitted function's statics).
ACTIVATIONS: dict[str, Callable[[jax.Array], jax.Array]] = {
    "relu": nnx.relu,
    "gelu": partial(nnx.gelu, approximate=False),
    "gelu_tanh": partial(nnx.gelu, approximate=True),
}


#: The compiled programs the adapter's jitted functions may hold before :func:`release_compiled` drops them
#: all: a program is about 1 to 5 MiB of machine code, and the suite draws new shapes for almost every call.
MAX_COMPILED = 64
_JITTED: list[Any] = []


def _jit(**options: Any) -> Callable[[Callable[..., Any]], Any]:
    """``jax.jit(fn, **options)``, registered so that :func:`release_compiled` can count what it holds, and
    called after :func:`release_compiled` (the jitted function itself is the wrapper's ``jitted``)."""
    def wrap(fn: Callable[..., Any]) -> Any:
        jitted = jax.jit(fn, **options)
        _JITTED.append(jitted)

        @wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            release_compiled()
            return jitted(*args, **kwargs)

        call.jitted = jitted  # type: ignore[attr-defined]
        return call
    return wrap


def release_compiled(limit: int = MAX_COMPILED) -> bool:
    """Once the jitted functions hold ``limit`` compiled programs or more: clear JAX's caches and give the
    freed memory back to the system (``malloc_trim``); whether it did.

    ``jax.jit`` keeps every program it compiles, one per shape and static setting, for as long as the
    process lives. A worker that serves row after row of ever new shapes would grow by gigabytes
    (measured: about 5 MiB per encoder-stack program; a worker of the attention, positions and blocks
    rows reached the suite's 4096 MiB limit after some 200 rows). With the caches cleared every 64
    programs, 200 encoder stacks of new shapes peak at 549 MiB (202 MiB before the first). A shape
    seen again after a clear compiles again: the answers do not change.
    """
    try:
        held = sum(f._cache_size() for f in _JITTED)
    except AttributeError:  # a JAX without the count: clear every time
        held = limit
    if held < limit:
        return False
    jax.clear_caches()
    gc.collect()
    try:
        ctypes.CDLL(None).malloc_trim(0)  # glibc: return the freed arenas; elsewhere the memory is reused
    except (OSError, AttributeError):
        pass
    return True


def _devices() -> frozenset[str]:
    """``cpu``, and ``cuda`` where the installed jaxlib has a CUDA backend."""
    try:
        jax.devices("cuda")
    except RuntimeError:
        return frozenset({"cpu"})
    return frozenset({"cpu", "cuda"})


# -- loading the protocol's weights into Flax modules ----------------------------------------------
def _fit(spec: jax.ShapeDtypeStruct, weight: jax.Array) -> jax.Array:
    """``weight`` reshaped to the Flax parameter ``spec`` describes (same size and dtype, row-major order)."""
    if weight.size != math.prod(spec.shape) or weight.dtype != spec.dtype:
        raise ValueError(f"a weight of shape {tuple(weight.shape)} and dtype {weight.dtype} cannot be the Flax "
                         f"parameter of shape {tuple(spec.shape)} and dtype {spec.dtype}")
    return weight.reshape(spec.shape)


def loaded(make: Callable[[nnx.Rngs], nnx.Module], params: dict[str, Any]) -> Any:
    """The module ``make`` builds, with ``params`` (a nested dict laid out as the module's ``nnx.Param``
    state, each array reshaped to its parameter) as its parameters; no random initialisation is run.

    Every parameter must be given: ``jax.tree.map`` refuses a missing or an extra one.
    """
    graphdef, state = nnx.split(nnx.eval_shape(lambda: make(nnx.Rngs(0))))
    nnx.replace_by_pure_dict(state, jax.tree.map(_fit, nnx.to_pure_dict(state), params))
    return nnx.merge(graphdef, state)


def _mha(heads: int, d_model: int, width: int, *, bias: bool, dtype: Any, rngs: nnx.Rngs) -> nnx.MultiHeadAttention:
    if heads < 1 or width % heads:
        raise ValueError(f"heads={heads} must be >= 1 and divide the projection width {width}")
    return nnx.MultiHeadAttention(heads, d_model, qkv_features=width, out_features=d_model, use_bias=bias,
                                  dtype=dtype, param_dtype=dtype, decode=False, keep_rngs=False, rngs=rngs)


def _norm(d: int, eps: float, dtype: Any, rngs: nnx.Rngs) -> nnx.LayerNorm:
    return nnx.LayerNorm(d, epsilon=eps, dtype=dtype, param_dtype=dtype, rngs=rngs)


def _attention_params(w: dict[str, jax.Array], prefix: str = "") -> dict[str, Any]:
    """A ``MultiHeadAttention``'s parameters from the protocol's ``w_q ... b_o`` (``wc_q ... bc_o`` with ``c``)."""
    return {name: {"kernel": w[f"w{prefix}_{x}"], "bias": w[f"b{prefix}_{x}"]}
            for name, x in (("query", "q"), ("key", "k"), ("value", "v"), ("out", "o"))}


def _ffn_params(w: dict[str, jax.Array]) -> dict[str, Any]:
    return {"linear1": {"kernel": w["w_1"], "bias": w["b_1"]}, "linear2": {"kernel": w["w_2"], "bias": w["b_2"]}}


def _norm_params(gamma: jax.Array, beta: jax.Array) -> dict[str, jax.Array]:
    return {"scale": gamma, "bias": beta}


# -- layers composed from Flax's own --------------------------------------------------------------
class FeedForward(nnx.Module):
    """``linear2(activation(linear1(x)))``: two ``nnx.Linear`` around a named activation."""

    def __init__(self, d_model: int, d_ff: int, activation: str, *, dtype: Any, rngs: nnx.Rngs) -> None:
        self.linear1 = nnx.Linear(d_model, d_ff, dtype=dtype, param_dtype=dtype, rngs=rngs)
        self.linear2 = nnx.Linear(d_ff, d_model, dtype=dtype, param_dtype=dtype, rngs=rngs)
        self.activation = activation

    def __call__(self, x: jax.Array) -> jax.Array:
        return self.linear2(ACTIVATIONS[self.activation](self.linear1(x)))


class EncoderLayer(nnx.Module):
    """Self-attention and a feed-forward network, each a residual sublayer, post- or pre-norm."""

    def __init__(self, d_model: int, heads: int, d_ff: int, *, norm_first: bool, activation: str, eps: float,
                 dtype: Any, rngs: nnx.Rngs) -> None:
        self.attention = _mha(heads, d_model, d_model, bias=True, dtype=dtype, rngs=rngs)
        self.norm1 = _norm(d_model, eps, dtype, rngs)
        self.norm2 = _norm(d_model, eps, dtype, rngs)
        self.ffn = FeedForward(d_model, d_ff, activation, dtype=dtype, rngs=rngs)
        self.norm_first = norm_first

    def __call__(self, x: jax.Array, causal: bool = False) -> jax.Array:
        if self.norm_first:  # y = x + SA(LN_1(x)), out = y + FFN(LN_2(y))
            y = x + self.attention(self.norm1(x), is_causal=causal)
            return y + self.ffn(self.norm2(y))
        y = self.norm1(x + self.attention(x, is_causal=causal))  # y = LN_1(x + SA(x)), out = LN_2(y + FFN(y))
        return self.norm2(y + self.ffn(y))


class DecoderLayer(nnx.Module):
    """Causal self-attention, cross-attention to ``memory`` and a feed-forward network, post- or pre-norm."""

    def __init__(self, d_model: int, heads: int, d_ff: int, *, norm_first: bool, activation: str, eps: float,
                 dtype: Any, rngs: nnx.Rngs) -> None:
        self.self_attention = _mha(heads, d_model, d_model, bias=True, dtype=dtype, rngs=rngs)
        self.cross_attention = _mha(heads, d_model, d_model, bias=True, dtype=dtype, rngs=rngs)
        self.norm1 = _norm(d_model, eps, dtype, rngs)
        self.norm2 = _norm(d_model, eps, dtype, rngs)
        self.norm3 = _norm(d_model, eps, dtype, rngs)
        self.ffn = FeedForward(d_model, d_ff, activation, dtype=dtype, rngs=rngs)
        self.norm_first = norm_first

    def __call__(self, x: jax.Array, memory: jax.Array) -> jax.Array:
        if self.norm_first:
            y = x + self.self_attention(self.norm1(x), is_causal=True)
            z = y + self.cross_attention(self.norm2(y), memory)
            return z + self.ffn(self.norm3(z))
        y = self.norm1(x + self.self_attention(x, is_causal=True))
        z = self.norm2(y + self.cross_attention(y, memory))
        return self.norm3(z + self.ffn(z))


class EncoderStack(nnx.Module):
    """Encoder layers in an ``nnx.List``, then a final ``nnx.LayerNorm`` if there is one."""

    def __init__(self, layers: int, d_model: int, heads: int, d_ff: int, *, norm_first: bool, final_norm: bool,
                 activation: str, eps: float, dtype: Any, rngs: nnx.Rngs) -> None:
        self.layers = nnx.List([EncoderLayer(d_model, heads, d_ff, norm_first=norm_first, activation=activation,
                                             eps=eps, dtype=dtype, rngs=rngs) for _ in range(layers)])
        self.final_norm = _norm(d_model, eps, dtype, rngs) if final_norm else None

    def __call__(self, x: jax.Array, causal: bool = False) -> jax.Array:
        for layer in self.layers:
            x = layer(x, causal)
        return x if self.final_norm is None else self.final_norm(x)


class InputEmbedding(nnx.Module):
    """Token rows (times ``sqrt(d_model)`` when ``scale``) plus the rows of positions ``0 .. t-1``."""

    def __init__(self, vocab: int, n_max: int, d_model: int, *, dtype: Any, rngs: nnx.Rngs) -> None:
        self.tokens = nnx.Embed(vocab, d_model, dtype=dtype, param_dtype=dtype, rngs=rngs)
        self.positions = nnx.Embed(n_max, d_model, dtype=dtype, param_dtype=dtype, rngs=rngs)

    def __call__(self, tokens: jax.Array, scale: bool = False) -> jax.Array:
        x = self.tokens(tokens)  # (B, t) -> (B, t, d_model)
        if scale:
            x = x * math.sqrt(x.shape[-1])
        return x + self.positions(jnp.arange(tokens.shape[-1]))[None]  # + (1, t, d_model)


class Transformer(nnx.Module):
    """The model :meth:`FlaxLayers.count_parameters` counts (built abstractly, never run)."""

    def __init__(self, c: Any, rngs: nnx.Rngs) -> None:
        d, dtype = c.d_model, jnp.float32
        embed = lambda rows: nnx.Embed(rows, d, rngs=rngs)  # noqa: E731
        norm = lambda: _norm(d, 1e-5, dtype, rngs)  # noqa: E731
        layer = dict(norm_first=False, activation="relu", eps=1e-5, dtype=dtype, rngs=rngs)
        self.tokens = embed(c.vocab_size)
        self.target_tokens = embed(c.vocab_size) if c.encoder_layers and c.decoder_layers and not c.shared_embeddings \
            else None
        self.positions = embed(c.max_len) if c.positions == "learned" else None
        self.token_types = embed(c.token_types) if c.token_types else None
        self.embedding_norm = norm() if c.embedding_norm else None
        self.encoder = nnx.List([EncoderLayer(d, c.heads, c.d_ff, **layer) for _ in range(c.encoder_layers)])
        self.encoder_norm = norm() if c.final_norm and c.encoder_layers else None
        self.decoder = nnx.List([DecoderLayer(d, c.heads, c.d_ff, **layer) for _ in range(c.decoder_layers)])
        self.decoder_norm = norm() if c.final_norm and c.decoder_layers else None
        # tied: the logits are self.tokens.attend(h), Flax's weight-tied output, which holds no parameter
        self.output = nnx.Linear(d, c.vocab_size, use_bias=False, rngs=rngs) if c.output_layer and not c.tied_output \
            else None


# -- the jitted calls ------------------------------------------------------------------------------
class _Sink(nnx.Module):
    """A module for ``nnx.dot_product_attention`` to sow its weights into."""


@_jit(static_argnames=("causal",))
def _attention(q: jax.Array, k: jax.Array, v: jax.Array, mask: jax.Array | None, *,
               causal: bool) -> tuple[jax.Array, jax.Array]:
    t_q, t_k = q.shape[-2], k.shape[-2]
    if mask is not None:
        mask = jnp.broadcast_to(mask, (*q.shape[:-2], t_q, t_k))[..., None, :, :]  # (..., 1 head, t_q, t_k)

    def heads(sink: _Sink) -> jax.Array:  # (..., t, 1 head, d): one head
        return nnx.dot_product_attention(q[..., None, :], k[..., None, :], v[..., None, :], mask=mask,
                                         is_causal=causal, module=sink)

    out, sown = nnx.capture(heads, nnx.Intermediate)(_Sink())
    (weights,) = sown["attention_weights"].get_value()  # (..., 1 head, t_q, t_k)
    return out[..., 0, :], weights[..., 0, :, :]


@_jit(static_argnames=("heads", "causal"))
def _multihead(query: jax.Array, key: jax.Array, value: jax.Array, weights: dict[str, jax.Array],
               mask: jax.Array | None, *, heads: int, causal: bool) -> jax.Array:
    d_model, width = weights["query"]["kernel"].shape
    module = loaded(lambda rngs: _mha(heads, d_model, width, bias=False, dtype=query.dtype, rngs=rngs), weights)
    if mask is not None:
        mask = jnp.broadcast_to(mask, (query.shape[0], query.shape[1], key.shape[1]))[:, None]  # (B, 1, t_q, t_k)
    return module(query, key, value, mask=mask, is_causal=causal)


@_jit(static_argnames=("eps",))
def _layer_norm(x: jax.Array, params: dict[str, jax.Array], *, eps: float) -> jax.Array:
    return loaded(lambda rngs: _norm(x.shape[-1], eps, x.dtype, rngs), params)(x)


@_jit(static_argnames=("activation",))
def _feed_forward(x: jax.Array, params: dict[str, Any], *, activation: str) -> jax.Array:
    d_model, d_ff = params["linear1"]["kernel"].shape
    return loaded(lambda rngs: FeedForward(d_model, d_ff, activation, dtype=x.dtype, rngs=rngs), params)(x)


@_jit(static_argnames=("heads", "norm_first", "activation", "eps", "causal"))
def _encoder_layer(x: jax.Array, params: dict[str, Any], *, heads: int, norm_first: bool, activation: str,
                   eps: float, causal: bool) -> jax.Array:
    d_model, d_ff = params["ffn"]["linear1"]["kernel"].shape
    layer = loaded(lambda rngs: EncoderLayer(d_model, heads, d_ff, norm_first=norm_first, activation=activation,
                                             eps=eps, dtype=x.dtype, rngs=rngs), params)
    return layer(x, causal)


@_jit(static_argnames=("heads", "norm_first", "activation", "eps"))
def _decoder_layer(x: jax.Array, memory: jax.Array, params: dict[str, Any], *, heads: int, norm_first: bool,
                   activation: str, eps: float) -> jax.Array:
    d_model, d_ff = params["ffn"]["linear1"]["kernel"].shape
    layer = loaded(lambda rngs: DecoderLayer(d_model, heads, d_ff, norm_first=norm_first, activation=activation,
                                             eps=eps, dtype=x.dtype, rngs=rngs), params)
    return layer(x, memory)


@_jit(static_argnames=("heads", "norm_first", "activation", "eps", "causal"))
def _encoder_stack(x: jax.Array, params: dict[str, Any], *, heads: int, norm_first: bool, activation: str,
                   eps: float, causal: bool) -> jax.Array:
    n, d_model, d_ff = len(params["layers"]), *params["layers"][0]["ffn"]["linear1"]["kernel"].shape
    stack = loaded(lambda rngs: EncoderStack(n, d_model, heads, d_ff, norm_first=norm_first,
                                             final_norm="final_norm" in params, activation=activation, eps=eps,
                                             dtype=x.dtype, rngs=rngs), params)
    return stack(x, causal)


def _embed(table: jax.Array) -> Callable[[nnx.Rngs], nnx.Embed]:
    return lambda rngs: nnx.Embed(*table.shape, dtype=table.dtype, param_dtype=table.dtype, rngs=rngs)


@_jit()
def _lookup(ids: jax.Array, table: jax.Array) -> jax.Array:
    return loaded(_embed(table), {"embedding": table})(ids)


@_jit()
def _attend(hidden: jax.Array, table: jax.Array) -> jax.Array:
    return loaded(_embed(table), {"embedding": table}).attend(hidden)


@_jit()
def _lookup_gradient(ids: jax.Array, table: jax.Array, upstream: jax.Array) -> jax.Array:
    module = loaded(_embed(table), {"embedding": table})
    grads = nnx.grad(lambda m: jnp.sum(m(ids) * upstream))(module)
    return grads["embedding"].get_value()


@_jit(static_argnames=("scale",))
def _input_embedding(tokens: jax.Array, token_table: jax.Array, position_table: jax.Array, *,
                     scale: bool) -> jax.Array:
    (vocab, d_model), n_max = token_table.shape, position_table.shape[0]
    module = loaded(lambda rngs: InputEmbedding(vocab, n_max, d_model, dtype=token_table.dtype, rngs=rngs),
                    {"tokens": {"embedding": token_table}, "positions": {"embedding": position_table}})
    return module(tokens, scale)


def _activation(name: str) -> str:
    if name not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {', '.join(ACTIVATIONS)}, got {name!r}")
    return name


class FlaxLayers:
    """Flax's ``nnx`` layers, one jitted call per operation."""

    name = "flax"
    capabilities = Capabilities(
        arrays="jax",
        devices=_devices(),
        conventions={
            # nnx.MultiHeadAttention has one width for queries, keys and values (qkv_features / num_heads)
            "value_width": {"d_model_over_h"},
            "key_width": {"d_model_over_h"},
            "separate_key_value": {True, False},  # inputs_k and inputs_v are separate arguments
            "returns_weights": {True},  # sown by nnx.dot_product_attention, captured by nnx.capture
            "causal_alignment": {"top-left"},  # is_causal: tril of a (t_q, t_k) matrix
            "activation": {"relu", "gelu", "gelu_tanh"},  # nnx.relu, nnx.gelu(approximate=False / True)
            "norm_first": {False, True},
            "model_layout": {"encoder-decoder"},
            # XLA takes a mean as the sum times a rounded 1/d (63 features of 1.125: 1.12500012 in float32)
            "layer_norm_mean": {"rounded-reciprocal"},
        },
    )

    # -- attention --------------------------------------------------------------------------------
    def attention(self, q: jax.Array, k: jax.Array, v: jax.Array, mask: jax.Array | None = None, *,
                  causal: bool = False) -> AttentionOutput:
        """``nnx.dot_product_attention`` on one head, its sown weights captured (``nnx.capture``)."""
        output, weights = _attention(q, k, v, mask, causal=causal)
        return AttentionOutput(output, weights)

    def multihead_attention(self, query: jax.Array, key: jax.Array, value: jax.Array, params: Any,
                            mask: jax.Array | None = None, *, causal: bool = False) -> jax.Array:
        """``nnx.MultiHeadAttention(use_bias=False)`` holding ``W^Q, W^K, W^V, W^O``."""
        h = params.h
        if params.w_q.shape[1] != params.w_v.shape[1]:
            raise NotApplicable(f"nnx.MultiHeadAttention has one width for queries, keys and values "
                                f"(qkv_features); got d_k={params.w_q.shape[1] // h}, d_v={params.w_v.shape[1] // h}")
        weights = {name: {"kernel": w} for name, w in
                   (("query", params.w_q), ("key", params.w_k), ("value", params.w_v), ("out", params.w_o))}
        return _multihead(query, key, value, weights, mask, heads=h, causal=causal)

    # -- blocks -----------------------------------------------------------------------------------
    def layer_norm(self, x: jax.Array, gamma: jax.Array, beta: jax.Array, *, eps: float = 1e-5) -> jax.Array:
        """``nnx.LayerNorm(d, epsilon=eps)`` with ``scale = gamma`` and ``bias = beta``."""
        return _layer_norm(x, _norm_params(gamma, beta), eps=float(eps))

    def feed_forward(self, x: jax.Array, w_1: jax.Array, b_1: jax.Array, w_2: jax.Array, b_2: jax.Array, *,
                     activation: str = "relu") -> jax.Array:
        """:class:`FeedForward`: ``nnx.Linear``, the activation, ``nnx.Linear``."""
        params = _ffn_params({"w_1": w_1, "b_1": b_1, "w_2": w_2, "b_2": b_2})
        return _feed_forward(x, params, activation=_activation(activation))

    @staticmethod
    def _layer_params(weights: dict[str, jax.Array], attentions: dict[str, str], norms: int) -> dict[str, Any]:
        params: dict[str, Any] = {name: _attention_params(weights, prefix) for name, prefix in attentions.items()}
        params["ffn"] = _ffn_params(weights)
        for i in range(1, norms + 1):
            params[f"norm{i}"] = _norm_params(weights[f"gamma_{i}"], weights[f"beta_{i}"])
        return params

    def encoder_layer(self, x: jax.Array, weights: dict[str, jax.Array], *, heads: int, norm_first: bool,
                      activation: str = "relu", eps: float = 1e-5, causal: bool = False) -> jax.Array:
        """:class:`EncoderLayer` (Flax's ``MultiHeadAttention``, ``LayerNorm`` and ``Linear``) holding ``weights``."""
        params = self._layer_params(weights, {"attention": ""}, 2)
        return _encoder_layer(x, params, heads=heads, norm_first=bool(norm_first),
                              activation=_activation(activation), eps=float(eps), causal=bool(causal))

    def decoder_layer(self, x: jax.Array, memory: jax.Array, weights: dict[str, jax.Array], *, heads: int,
                      norm_first: bool, activation: str = "relu", eps: float = 1e-5) -> jax.Array:
        """:class:`DecoderLayer` holding ``weights``: causal self-attention, cross-attention, feed-forward."""
        if memory.ndim != 3 or memory.shape[0] != x.shape[0] or memory.shape[-1] != x.shape[-1]:
            raise ValueError(f"memory must be (B={x.shape[0]}, s, d_model={x.shape[-1]}), got {tuple(memory.shape)}")
        params = self._layer_params(weights, {"self_attention": "", "cross_attention": "c"}, 3)
        return _decoder_layer(x, memory, params, heads=heads, norm_first=bool(norm_first),
                              activation=_activation(activation), eps=float(eps))

    def encoder_stack(self, x: jax.Array, layers: list[dict[str, jax.Array]], *, heads: int, norm_first: bool,
                      final_norm: tuple[jax.Array, jax.Array] | None = None, activation: str = "relu",
                      eps: float = 1e-5, causal: bool = False) -> jax.Array:
        """:class:`EncoderStack` of ``len(layers)`` layers and, when given, the final ``nnx.LayerNorm``."""
        if not layers:
            raise ValueError("an encoder stack needs at least one layer")
        params: dict[str, Any] = {"layers": {i: self._layer_params(w, {"attention": ""}, 2)
                                             for i, w in enumerate(layers)}}
        if final_norm is not None:
            params["final_norm"] = _norm_params(*final_norm)
        return _encoder_stack(x, params, heads=heads, norm_first=bool(norm_first), activation=_activation(activation),
                              eps=float(eps), causal=bool(causal))

    def count_parameters(self, config: Any) -> int:
        """The ``nnx.Param`` scalars of :class:`Transformer` built from ``config`` with ``nnx.eval_shape``."""
        model = nnx.eval_shape(lambda: Transformer(config, nnx.Rngs(0)))
        return sum(math.prod(leaf.shape) for leaf in jax.tree.leaves(nnx.state(model, nnx.Param)))

    # -- positions --------------------------------------------------------------------------------
    def learned_positions(self, positions: jax.Array, table: jax.Array) -> jax.Array:
        """``nnx.Embed(n_max, d)`` holding ``table``, called on ``positions``."""
        return _lookup(positions, table)

    def input_embedding(self, tokens: jax.Array, token_table: jax.Array, position_table: jax.Array, *,
                        scale: bool = False) -> jax.Array:
        """:class:`InputEmbedding`: ``nnx.Embed`` of the tokens (times ``sqrt(d_model)`` when ``scale``) plus
        ``nnx.Embed`` of ``0 .. t-1``."""
        return _input_embedding(tokens, token_table, position_table, scale=bool(scale))

    # -- embeddings -------------------------------------------------------------------------------
    def embedding_lookup(self, ids: jax.Array, table: jax.Array) -> jax.Array:
        """``nnx.Embed(V, d)`` holding ``table``, called on ``ids``: shape ``ids.shape + (d,)``."""
        return _lookup(ids, table)

    def tied_logits(self, hidden: jax.Array, table: jax.Array) -> jax.Array:
        """``nnx.Embed(V, d).attend(hidden)``: Flax's weight-tied output layer, ``(B, d) -> (B, V)``."""
        return _attend(hidden, table)

    def lookup_gradient(self, ids: jax.Array, table: jax.Array, upstream: jax.Array) -> jax.Array:
        """``nnx.grad`` of ``sum(embed(ids) * upstream)`` with respect to ``nnx.Embed``'s table: ``(V, d)``."""
        return _lookup_gradient(ids, table, upstream)


implementation = FlaxLayers()
