"""Model architectures: the catalog (tracker/estimate/data/models.toml), Hugging Face config.json parsing,
bare parameter counts, and the parameter counts the estimate needs.

Counts are derived from the dimensions rather than stored, so a user's config.json gets exactly
the same treatment as a catalog model. Only the block linears are candidates for 4-bit
quantization and LoRA; embeddings, lm_head, norms, biases and MoE routers stay 16-bit.
"""

from __future__ import annotations

import difflib
import json
import math
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from tracker.estimate.errors import InvalidJob, InvalidModelConfig, UnknownModel

DATA_DIR = Path(__file__).resolve().parent / "data"

# Canonical LoRA target names; the aliases cover HF, torchtune and Mixtral (w1/w2/w3) spellings.
LORA_MODULES: tuple[str, ...] = ("q", "k", "v", "o", "gate", "up", "down")
_TARGET_ALIASES: dict[str, tuple[str, ...]] = {
    "q": ("q",),
    "q_proj": ("q",),
    "query": ("q",),
    "k": ("k",),
    "k_proj": ("k",),
    "key": ("k",),
    "v": ("v",),
    "v_proj": ("v",),
    "value": ("v",),
    "o": ("o",),
    "o_proj": ("o",),
    "output_proj": ("o",),
    "out_proj": ("o",),
    "dense": ("o",),
    "gate": ("gate",),
    "gate_proj": ("gate",),
    "w1": ("gate",),
    "up": ("up",),
    "up_proj": ("up",),
    "w3": ("up",),
    "down": ("down",),
    "down_proj": ("down",),
    "w2": ("down",),
    "qkv_proj": ("q", "k", "v"),
    "gate_up_proj": ("gate", "up"),
    "attn": ("q", "k", "v", "o"),
    "attention": ("q", "k", "v", "o"),
    "mlp": ("gate", "up", "down"),
    "all": LORA_MODULES,
    "all-linear": LORA_MODULES,
    "all_linear": LORA_MODULES,
}
ALL_LINEAR: tuple[str, ...] = LORA_MODULES


def normalize_targets(targets: str | Iterable[str]) -> tuple[str, ...]:
    """Turn user spellings ("all-linear", "q_proj,v_proj", ["attn", "mlp"]) into canonical names."""
    items = re.split(r"[,\s]+", targets) if isinstance(targets, str) else list(targets)
    out: set[str] = set()
    for raw in items:
        key = raw.strip().lower()
        if not key:
            continue
        if key not in _TARGET_ALIASES:
            raise InvalidJob(
                f"unknown LoRA target {raw!r}; use any of {', '.join(LORA_MODULES)}, all-linear, attn, mlp "
                "(HF names like q_proj also work)",
                field="lora_targets",
            )
        out.update(_TARGET_ALIASES[key])
    if not out:
        raise InvalidJob("no LoRA targets given", field="lora_targets")
    return tuple(m for m in LORA_MODULES if m in out)


@dataclass(frozen=True, slots=True)
class ModelArch:
    id: str
    name: str
    hidden: int
    intermediate: int  # per expert for MoE
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    tied_embeddings: bool
    max_seq_len: int
    experts: int = 1
    experts_per_token: int = 1
    qkv_bias: bool = False
    norms_per_layer: int = 2
    hf_id: str | None = None
    aliases: tuple[str, ...] = ()
    published_params_b: float | None = None
    source: str = "catalog"  # "catalog" | "hf-config" | "param-count"
    approximate: bool = False  # dimensions guessed from a bare parameter count
    note: str | None = field(default=None, compare=False)

    @property
    def q_dim(self) -> int:
        return self.heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.kv_heads * self.head_dim

    def module_shapes(self) -> dict[str, tuple[int, int, int]]:
        """(d_in, d_out, copies per layer) of each block linear; copies > 1 only for MoE experts."""
        h, i, e = self.hidden, self.intermediate, self.experts
        return {
            "q": (h, self.q_dim, 1),
            "k": (h, self.kv_dim, 1),
            "v": (h, self.kv_dim, 1),
            "o": (self.q_dim, h, 1),
            "gate": (h, i, e),
            "up": (h, i, e),
            "down": (i, h, e),
        }

    @property
    def params(self) -> ParamCounts:
        return param_counts(self)

    def lora_params(self, rank: int, targets: Iterable[str] = ALL_LINEAR) -> int:
        """Adapter parameters: r·(d_in + d_out) per adapted matrix, on every expert for MoE."""
        shapes = self.module_shapes()
        per_layer = sum(rank * (shapes[m][0] + shapes[m][1]) * shapes[m][2] for m in targets)
        return per_layer * self.layers

    def summary(self) -> dict[str, Any]:
        p = self.params
        return {
            "id": self.id,
            "name": self.name,
            "hf_id": self.hf_id,
            "source": self.source,
            "approximate": self.approximate,
            "hidden": self.hidden,
            "intermediate": self.intermediate,
            "layers": self.layers,
            "heads": self.heads,
            "kv_heads": self.kv_heads,
            "head_dim": self.head_dim,
            "vocab": self.vocab,
            "tied_embeddings": self.tied_embeddings,
            "experts": self.experts,
            "experts_per_token": self.experts_per_token,
            "max_seq_len": self.max_seq_len,
            "qkv_bias": self.qkv_bias,
            "params_b": round(p.total / 1e9, 3),
            "active_params_b": round(p.active / 1e9, 3),
            "lora_r16_all_linear_m": round(self.lora_params(16) / 1e6, 1),
            "aliases": list(self.aliases),
        }


@dataclass(frozen=True, slots=True)
class ParamCounts:
    embedding: int
    lm_head: int  # 0 when tied: the matrix is stored once
    norms: int
    biases: int
    routers: int
    linear: int  # block linears, every expert: what 4-bit quantization applies to
    linear_active: int  # block linears a token actually passes through (routed experts only)
    largest_linear: int  # elements of the biggest single matrix: the dequantization scratch buffer

    @property
    def unquantized(self) -> int:
        """Parameters that stay 16-bit (or are up-cast) under QLoRA."""
        return self.embedding + self.lm_head + self.norms + self.biases + self.routers

    @property
    def total(self) -> int:
        return self.linear + self.unquantized

    @property
    def active(self) -> int:
        return self.linear_active + self.unquantized

    def matmul_per_token(self, vocab: int, hidden: int) -> int:
        """Weights each token multiplies through: routed block linears plus the output projection.

        The embedding is a lookup (no FLOPs), but lm_head is a real V×h matmul even when tied.
        """
        return self.linear_active + vocab * hidden


@lru_cache(maxsize=4096)  # bounded: API callers can send any number of distinct inline configs
def param_counts(arch: ModelArch) -> ParamCounts:
    shapes = arch.module_shapes()
    attn = sum(d_in * d_out for m, (d_in, d_out, _) in shapes.items() if m in ("q", "k", "v", "o"))
    mlp_one = sum(d_in * d_out for m, (d_in, d_out, _) in shapes.items() if m in ("gate", "up", "down"))
    linear = arch.layers * (attn + mlp_one * arch.experts)
    linear_active = arch.layers * (attn + mlp_one * arch.experts_per_token)
    embedding = arch.vocab * arch.hidden
    lm_head = 0 if arch.tied_embeddings else embedding
    norms = arch.layers * arch.norms_per_layer * arch.hidden + arch.hidden
    biases = arch.layers * (arch.q_dim + 2 * arch.kv_dim) if arch.qkv_bias else 0
    routers = arch.layers * arch.hidden * arch.experts if arch.experts > 1 else 0
    largest = max(d_in * d_out for d_in, d_out, _ in shapes.values())
    return ParamCounts(
        embedding=embedding,
        lm_head=lm_head,
        norms=norms,
        biases=biases,
        routers=routers,
        linear=linear,
        linear_active=linear_active,
        largest_linear=largest,
    )


# --- catalog -------------------------------------------------------------------------------------


@cache
def catalog() -> dict[str, ModelArch]:
    with (DATA_DIR / "models.toml").open("rb") as fh:
        raw = tomllib.load(fh)
    models: dict[str, ModelArch] = {}
    for entry in raw["model"]:
        entry = dict(entry)
        entry["aliases"] = tuple(entry.get("aliases", ()))
        arch = ModelArch(**entry)
        models[arch.id] = arch
    return models


def all_models() -> list[ModelArch]:
    return list(catalog().values())


@cache
def _lookup_table() -> dict[str, str]:
    table: dict[str, str] = {}
    for arch in catalog().values():
        for key in (arch.id, *arch.aliases, arch.hf_id or "", arch.name):
            if key:
                table[_norm_key(key)] = arch.id
    return table


def _norm_key(text: str) -> str:
    text = text.strip().lower()
    text = text.rsplit("/", 1)[-1]  # "meta-llama/Llama-3.1-8B" -> "llama-3.1-8b"
    return re.sub(r"[\s_]+", "-", text)


_COUNT_RE = re.compile(r"^\s*(\d+(?:\.\d+)?(?:e\d+)?)\s*([kmbt]?)\s*$", re.IGNORECASE)
_COUNT_SCALE = {"": 1.0, "k": 1e3, "m": 1e6, "b": 1e9, "t": 1e12}


def parse_param_count(text: str) -> float | None:
    """'7B' -> 7e9, '500M' -> 5e8, '8030000000' -> 8.03e9; None if it is not a count."""
    m = _COUNT_RE.match(text)
    if not m:
        return None
    value = float(m.group(1)) * _COUNT_SCALE[m.group(2).lower()]
    # A bare small integer is more likely a typo than a 7-parameter model.
    if not m.group(2) and value < 1e6:
        return None
    return value


def resolve_model(query: str | Mapping[str, Any] | ModelArch, *, allow_files: bool = False) -> ModelArch:
    """Catalog id/alias/HF repo id, a config mapping, a count like '7B', or — only with
    `allow_files=True`, for a local user such as the CLI — a path to config.json. Off by default so
    that no request body, alert rule or stored job can make the server open a file it names.
    """
    if isinstance(query, ModelArch):
        return query
    if isinstance(query, Mapping):
        return from_hf_config(query, where="hf_config")  # a mapping is the API's (or a saved job's) inline config
    text = str(query).strip()
    if not text:
        raise UnknownModel(text, sorted(catalog())[:5])
    hit = _lookup_table().get(_norm_key(text))
    if hit:
        return catalog()[hit]
    if allow_files:
        path = Path(text).expanduser()
        if text.endswith(".json") or path.is_file():
            return load_hf_config(path)
    count = parse_param_count(text)
    if count is not None:
        return from_param_count(count)
    keys = list(_lookup_table())
    close = difflib.get_close_matches(_norm_key(text), keys, n=5, cutoff=0.5)
    ids = list(dict.fromkeys(_lookup_table()[k] for k in close))
    if not ids:
        # Fall back to a substring match so "qwen" suggests every Qwen size.
        ids = [m for m in catalog() if _norm_key(text) in m][:5]
    raise UnknownModel(text, ids)


# --- Hugging Face config.json ---------------------------------------------------------------------


def load_hf_config(path: Path) -> ModelArch:
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError as exc:
        raise InvalidModelConfig(f"config file not found: {path}", field="model") from exc
    except (OSError, json.JSONDecodeError) as exc:
        raise InvalidModelConfig(f"cannot read {path} as JSON: {exc}", field="model") from exc
    if not isinstance(raw, dict):
        raise InvalidModelConfig(f"{path} is not a JSON object", field="model")
    return from_hf_config(raw, default_id=path.parent.name if path.name == "config.json" else path.stem)


# Upper bounds on config.json dimensions: 4-8x the largest published models (Llama 3.1 405B: hidden
# 16384, 126 layers; DeepSeek-V3: 256 experts; Gemma 3: 262k vocabulary), so any real config passes,
# while every parameter count and FLOP figure derived from them stays a finite, sensible number.
# Past them a value is a typo or a probe (Infinity, 1e308), refused naming the field.
CONFIG_BOUNDS: dict[str, int] = {
    "hidden": 1 << 16,
    "heads": 1 << 10,
    "kv_heads": 1 << 10,
    "head_dim": 1 << 11,
    "experts": 1 << 10,
    "experts_per_token": 1 << 10,
    "intermediate": 1 << 19,
    "layers": 1 << 10,
    "vocab": 1 << 22,
    "max_seq_len": 1 << 30,
}


def _brief(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"an integer of {value.bit_length()} bits"  # repr of a huge int is long (or refused)
    text = repr(value)
    return text if len(text) <= 40 else text[:40] + "…"


class _Config:
    """Reads one config mapping; errors name the field as `<where>.<key>` (`where` is the API's
    `hf_config`, or None for a config.json file, whose errors name the CLI's `model` argument)."""

    def __init__(self, cfg: Mapping[str, Any], where: str | None) -> None:
        self.cfg = cfg
        self.where = where

    def field(self, name: str) -> str:
        return f"{self.where}.{name}" if self.where else "model"

    def count(self, bound: str, *names: str, default: int | None = None) -> int:
        most = CONFIG_BOUNDS[bound]
        for name in names:
            value = self.cfg.get(name)
            if value is None:
                continue
            # int(value) only once value is known to be a finite whole number: NaN and infinities would raise.
            whole = isinstance(value, int) or (isinstance(value, float) and math.isfinite(value) and value.is_integer())
            if isinstance(value, bool) or not whole or value <= 0:
                raise InvalidModelConfig(
                    f"config field {name!r} must be a positive integer, got {_brief(value)}", field=self.field(name)
                )
            if value > most:
                raise InvalidModelConfig(
                    f"config field {name!r} is implausibly large ({_brief(value)}; at most {most:,})",
                    field=self.field(name),
                )
            return int(value)
        if default is not None:
            return default
        raise InvalidModelConfig(f"config.json lacks {' / '.join(names)}", field=self.field(names[0]))


def from_hf_config(cfg: Mapping[str, Any], *, default_id: str | None = None, where: str | None = None) -> ModelArch:
    """Build an architecture from a transformers config dict (Llama/Qwen2/Mistral/Mixtral/Gemma/Phi-3).

    `where` names the config in errors (`hf_config` for the API's inline config, so a bad hidden
    size is field `hf_config.hidden_size`); without it they name `model`, the CLI's config.json path."""
    # Multimodal wrappers nest the language model's config.
    if "text_config" in cfg and "hidden_size" not in cfg:
        cfg = cfg["text_config"]
        where = f"{where}.text_config" if where else None
        if not isinstance(cfg, Mapping):
            raise InvalidModelConfig("text_config must be an object", field=where or "model")
    read = _Config(cfg, where)
    model_type = str(cfg.get("model_type", "")).lower()[:100]
    hidden = read.count("hidden", "hidden_size", "n_embd", "d_model")
    heads = read.count("heads", "num_attention_heads", "n_head")
    kv_heads = read.count("kv_heads", "num_key_value_heads", default=heads)
    head_dim = read.count("head_dim", "head_dim", default=max(1, hidden // heads))
    experts = read.count("experts", "num_local_experts", "num_experts", default=1)
    intermediate = read.count(
        "intermediate",
        *(("moe_intermediate_size",) if experts > 1 and "moe_intermediate_size" in cfg else ()),
        "intermediate_size",
        "ffn_dim",
        "n_inner",
        default=4 * hidden,
    )
    if heads % kv_heads:
        raise InvalidModelConfig(
            f"num_attention_heads ({heads}) is not a multiple of num_key_value_heads ({kv_heads})",
            field=read.field("num_key_value_heads"),
        )
    experts_per_token = 1
    if experts > 1:
        experts_per_token = read.count("experts_per_token", "num_experts_per_tok", default=min(experts, 2))
    if experts_per_token > experts:
        raise InvalidModelConfig(
            f"num_experts_per_tok ({experts_per_token}) exceeds the {experts} experts",
            field=read.field("num_experts_per_tok"),
        )
    tied_default = model_type.startswith("gemma")
    name = str(cfg.get("_name_or_path") or default_id or model_type or "custom model")[:200]
    return ModelArch(
        id=_norm_key(name) or "custom",
        name=name,
        hidden=hidden,
        intermediate=intermediate,
        layers=read.count("layers", "num_hidden_layers", "n_layer", "num_layers"),
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        vocab=read.count("vocab", "vocab_size"),
        tied_embeddings=bool(cfg.get("tie_word_embeddings", tied_default)),
        max_seq_len=read.count(
            "max_seq_len", "max_position_embeddings", "n_positions", "max_sequence_length", default=4096
        ),
        experts=experts,
        experts_per_token=experts_per_token,
        qkv_bias=bool(cfg.get("attention_bias", model_type.startswith("qwen2"))),
        norms_per_layer=4 if model_type in ("gemma2", "gemma3", "gemma3_text") else 2,
        source="hf-config",
    )


# --- bare parameter counts -----------------------------------------------------------------------

_GUESS_VOCAB = 128_256  # Llama-3 tokenizer: the most common vocabulary among current open models
_GUESS_HEAD_DIM = 128
_GUESS_KV_HEADS = 8
_GUESS_MLP_RATIO = 3.5  # Llama-3 intermediate/hidden


def from_param_count(n: float) -> ModelArch:
    """A Llama-3-shaped stand-in with ~n parameters, for when only the size is known.

    Memory and FLOPs depend mostly on the total, but activations and logits need hidden size,
    depth and vocabulary, so we pick the hidden size (multiple of 256, depth = hidden/128 as in
    Llama 3 8B/405B) whose implied MLP ratio is closest to Llama 3's, then size the MLP so the
    total lands on n. The result is flagged approximate in every output.
    """
    if not math.isfinite(n) or n < 1e8:
        raise InvalidJob("a bare parameter count must be at least 100M (e.g. 7B, 500M)", field="model")
    if n > 5e12:
        raise InvalidJob("a bare parameter count above 5T is not a plausible fine-tuning target", field="model")
    tied = n < 4e9  # small Llama 3.2 / Qwen2.5 models tie embeddings; large ones do not
    best: tuple[float, int, int, int] | None = None
    for h in range(512, 32768 + 1, 256):
        layers = max(2, round(h / 128))
        heads = max(1, h // _GUESS_HEAD_DIM)
        kv = min(_GUESS_KV_HEADS, heads)
        emb = _GUESS_VOCAB * h * (1 if tied else 2)
        attn = 2 * h * heads * _GUESS_HEAD_DIM + 2 * h * kv * _GUESS_HEAD_DIM
        rest = n - emb - layers * (attn + 2 * h) - h
        if rest <= 0:
            continue
        inter = rest / (3 * h * layers)
        score = abs(math.log(inter / (h * _GUESS_MLP_RATIO)))
        if best is None or score < best[0]:
            best = (score, h, layers, max(1, round(inter)))
    if best is None:
        raise InvalidJob(f"cannot shape a model of {n:.3g} parameters", field="model")
    _, h, layers, inter = best
    heads = h // _GUESS_HEAD_DIM
    label = f"{n / 1e9:g}B" if n >= 1e9 else f"{n / 1e6:g}M"
    return ModelArch(
        id=f"params-{label.lower()}",
        name=f"{label}-parameter model (Llama-3-shaped guess)",
        hidden=h,
        intermediate=inter,
        layers=layers,
        heads=heads,
        kv_heads=min(_GUESS_KV_HEADS, heads),
        head_dim=_GUESS_HEAD_DIM,
        vocab=_GUESS_VOCAB,
        tied_embeddings=tied,
        max_seq_len=131_072,
        source="param-count",
        approximate=True,
        note="dimensions guessed from the parameter count; give a config.json for exact memory figures",
    )
