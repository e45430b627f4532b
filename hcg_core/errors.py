"""One rooted error hierarchy, so callers can catch ``HCGError`` or one precise failure.

Every message says what was wrong and, where there is one, what to pass instead; errors about a
file carry its path in ``.path``.
"""

from __future__ import annotations

from pathlib import Path


class HCGError(Exception):
    """Root of every error hcg-rag raises on purpose."""


class ConfigError(HCGError, ValueError):
    """A setting is out of range or inconsistent."""


class MissingAPIKeyError(ConfigError):
    """OpenAI's API was chosen with no key: raised before any call, naming the variable to set."""


class SpecError(HCGError, ValueError):
    """A domain spec is invalid: the message names the offending entry."""

    def __init__(self, message: str, *, entry: str | None = None, path: Path | str | None = None):
        self.entry = entry
        self.path = Path(path) if path is not None else None
        where = f"{self.path}: " if self.path is not None else ""
        super().__init__(f"{where}{message}")


class InputError(HCGError, ValueError):
    """Corpus input that cannot be used: empty, unreadable, binary, not UTF-8, too large."""

    def __init__(self, message: str, *, path: Path | str | None = None):
        self.path = Path(path) if path is not None else None
        super().__init__(message)


class StoreError(HCGError):
    """A graph directory cannot be read or written."""

    def __init__(self, message: str, *, path: Path | str | None = None):
        self.path = Path(path) if path is not None else None
        where = f"{self.path}: " if self.path is not None else ""
        super().__init__(f"{where}{message}")


class MissingFileError(StoreError, FileNotFoundError):
    """A file the graph directory needs is absent."""


class CorruptFileError(StoreError):
    """A file of the graph directory exists but cannot be parsed or does not fit the format."""


class FormatVersionError(StoreError):
    """The directory was written by an incompatible version of the format."""


class GraphLockedError(StoreError):
    """Another process is writing the graph directory and did not finish within the timeout.

    ``holder`` is what the lock file says of its holder (pid, host, since), or ``""`` when unknown.
    """

    def __init__(self, message: str, *, path: Path | str | None = None, holder: str = ""):
        self.holder = holder
        super().__init__(message, path=path)


class EmbedderError(HCGError):
    """The embedder failed, returned a wrong shape, or does not match the stored embeddings."""


class BuildError(HCGError):
    """Graph building could not proceed."""


class LLMError(HCGError):
    """A call to the LLM failed after its retries."""


class LLMOutputError(LLMError, ValueError):
    """The LLM's reply did not validate against the response schema after the re-asks."""


class LLMUnavailableError(LLMError):
    """The LLM server kept failing (429, 5xx, timeouts) after every retry; rerun to resume."""


class LLMRejectedError(LLMError):
    """The provider rejected one request (HTTP 400) for a reason other than the response format
    or the temperature; the message is the provider's. That item fails, the build goes on."""


class LLMContextLengthError(LLMRejectedError):
    """The request is longer than the model's context: the pipeline splits the batch."""


class LLMTruncatedError(LLMOutputError):
    """The reply stopped at the token limit (``finish_reason == "length"``): split or raise it."""


class LLMProtocolError(LLMOutputError):
    """A 200 reply that is not an OpenAI chat completion (not JSON, no ``choices``): a failed
    item, counted as a call, not re-asked (a server that answers so answers every re-ask so)."""


class LLMCacheError(LLMError, StoreError):
    """The LLM reply cache cannot be written (a full disk): the build stops, the replies cached
    before stay, and a rerun resumes from them."""


class LLMRefusalError(LLMOutputError):
    """The model refused to answer (``message.refusal``); counted as a failed item."""


class IncompleteBuildError(BuildError):
    """A build whose LLM items failed, or whose graph is degenerate (no edges, no templates).

    ``report`` is the build report (failures grouped by cause under ``failure_causes``);
    ``result`` is the partial ``BuildResult`` when a graph could be assembled, else None.
    """

    def __init__(self, message: str, *, report: dict | None = None, result: object = None):
        self.report = report or {}
        self.result = result
        super().__init__(message)
