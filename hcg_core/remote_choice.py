"""Whether a command may send text to a remote provider: hcg is offline unless told otherwise.

Shared by the console script (``cli.py``) and ``hcg eval`` (``eval/cli.py``), so it lives outside
both: the console script is imported by nothing.
"""

from __future__ import annotations

import argparse
import os


def check_remote_choice(args: argparse.Namespace) -> None:
    """Refuse to send text to a provider nobody named: an ``openai:`` embedder or an LLM model
    without a base URL would go to api.openai.com (or ``$OPENAI_BASE_URL``) silently.

    Checked before anything is read or sent; ``--allow-remote`` or a base URL is the choice.
    """
    from .errors import ConfigError
    from .safe_text import host_of, redact

    if getattr(args, "allow_remote", False):
        return
    host = host_of(os.environ.get("OPENAI_BASE_URL"))
    unnamed = []
    embedder = getattr(args, "embedder", None) or ""
    if embedder.startswith("openai:") and not getattr(args, "embedder_base_url", None):
        unnamed.append(f"--embedder {embedder} (no --embedder-base-url)")
    if getattr(args, "llm_model", None) and not getattr(args, "llm_base_url", None):
        unnamed.append(f"--llm-model {args.llm_model} (no --llm-base-url)")
    if unnamed:
        raise ConfigError(
            redact(
                f"{' and '.join(unnamed)} would send the corpus to {host}"
                + (" (from OPENAI_BASE_URL)" if os.environ.get("OPENAI_BASE_URL") else "")
                + "; hcg is offline by default: pass the server's base URL, or --allow-remote to "
                "send it there"
            )
        )
