"""Typer options describing a fine-tuning job, shared by every command that takes one."""

from __future__ import annotations

import typer

MODEL = typer.Option(
    ..., "--model", "-m", help="Catalog id (llama-3.1-8b), HF repo id, path to config.json, or a size like 7B."
)
METHOD = typer.Option("qlora", "--method", help="full | lora | qlora")
RANK = typer.Option(16, "--rank", help="LoRA rank.")
LORA_TARGETS = typer.Option(
    "all-linear", "--lora-targets", help="Adapted modules: all-linear, attn, mlp, or a list like q,v,o."
)
SEQ_LEN = typer.Option(2048, "--seq-len", help="Tokens per sequence.")
BATCH = typer.Option(1, "--batch", help="Micro-batch per GPU.")
GRAD_CHECKPOINTING = typer.Option(True, "--grad-checkpointing/--no-grad-checkpointing")
OFFLOAD_ACTIVATIONS = typer.Option(
    False, "--offload-activations", help="Checkpointed activations live in CPU RAM (Unsloth, torchtune)."
)
TOKENS = typer.Option(None, "--tokens", help="Training tokens for the whole run, e.g. 22.5M.")
EXAMPLES = typer.Option(None, "--examples")
TOKENS_PER_EXAMPLE = typer.Option(None, "--tokens-per-example")
EPOCHS = typer.Option(1, "--epochs")
ASSUMPTIONS = typer.Option(None, "--assumptions", "-a", help="Assumption set: seed, hf-peft (default), optimized.")
