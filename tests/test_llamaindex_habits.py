"""LlamaIndex habits (issue 27, item 5): the query embedding goes through the callback manager
and instrumentation as in VectorIndexRetriever, and ``load_index_from_storage`` without
``import llama_index_hcg`` fails inside LlamaIndex, saying what to import."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from llama_index.core import Document, StorageContext, VectorStoreIndex, load_index_from_storage
from llama_index.core.callbacks import CallbackManager, CBEventType, LlamaDebugHandler
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler

from hcg_core.embedders import HashingEmbedder
from llama_index_hcg import HCGDefaultEmbedding, HCGIndex

ROOT = Path(__file__).resolve().parents[1]
TEXTS = [
    "Smoking causes inflammation of the arteries. Inflammation raises blood pressure.",
    "High blood pressure causes stroke. A diet high in salt raises blood pressure.",
    "Regular exercise lowers blood pressure and reduces the risk of stroke.",
]
QUERY = "What raises blood pressure?"


class Recorder(BaseEventHandler):
    """Every instrumentation event's class name, in order."""

    names: list[str] = []

    @classmethod
    def class_name(cls) -> str:
        return "Recorder"

    def handle(self, event, **kwargs) -> None:
        self.names.append(type(event).__name__)


@pytest.fixture
def recorder():
    dispatcher = get_dispatcher()  # the root: every LlamaIndex event propagates to it
    handler = Recorder(names=[])
    dispatcher.add_event_handler(handler)
    try:
        yield handler
    finally:
        dispatcher.event_handlers.remove(handler)


def _counts(handler: LlamaDebugHandler) -> dict[str, int]:
    return {
        kind.value: len(handler.get_event_pairs(kind))
        for kind in (CBEventType.RETRIEVE, CBEventType.EMBEDDING)
    }


@pytest.mark.parametrize("model", ["base_embedding", "core_embedder"])
def test_query_embedding_reaches_callbacks_and_instrumentation_as_vector_index(model, recorder):
    docs = [Document(text=t, id_=f"d{i}") for i, t in enumerate(TEXTS)]
    embed = HCGDefaultEmbedding(embedder=HashingEmbedder())
    seen = {}
    for name in ("hcg", "vector"):
        debug = LlamaDebugHandler()
        manager = CallbackManager([debug])
        if name == "hcg":
            given = embed if model == "base_embedding" else HashingEmbedder()
            index = HCGIndex.from_documents(docs, embed_model=given, callback_manager=manager)
        else:
            index = VectorStoreIndex.from_documents(
                docs, embed_model=embed, callback_manager=manager
            )
        debug.flush_event_logs()  # count the query only, not the build
        recorder.names.clear()
        index.as_retriever(similarity_top_k=2).retrieve(QUERY)
        seen[name] = (_counts(debug), list(recorder.names))
    assert seen["hcg"][0] == seen["vector"][0] == {"retrieve": 1, "embedding": 1}
    for name in ("hcg", "vector"):
        events = seen[name][1]
        assert events.count("EmbeddingStartEvent") == events.count("EmbeddingEndEvent") == 1
        start, end = events.index("RetrievalStartEvent"), events.index("RetrievalEndEvent")
        assert start < events.index("EmbeddingStartEvent") < end  # inside the retrieval


def test_aretrieve_embeds_through_the_model_too(recorder):
    debug = LlamaDebugHandler()
    index = HCGIndex.from_documents(
        [Document(text=t) for t in TEXTS],
        embed_model=HCGDefaultEmbedding(embedder=HashingEmbedder()),
        callback_manager=CallbackManager([debug]),
    )
    debug.flush_event_logs()
    recorder.names.clear()
    asyncio.run(index.as_retriever(similarity_top_k=2).aretrieve(QUERY))
    assert _counts(debug) == {"retrieve": 1, "embedding": 1}
    assert "EmbeddingStartEvent" in recorder.names


# ---------------------------------------------------------------- persistence without the import

LOAD = textwrap.dedent(
    """
    import sys
    from llama_index.core import StorageContext, load_index_from_storage
    try:
        load_index_from_storage(StorageContext.from_defaults(persist_dir=sys.argv[1]))
    except KeyError as exc:
        ours = sorted(m for m in sys.modules if m.split(".")[0] in ("hcg_core", "llama_index_hcg"))
        print(f"KeyError: {exc}")
        print("hcg modules:", ours)
        sys.exit(3)
    """
)


@pytest.fixture(scope="module")
def persisted(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("li") / "storage"
    index = HCGIndex.from_documents(
        [Document(text=t) for t in TEXTS], embed_model=HCGDefaultEmbedding(HashingEmbedder())
    )
    index.storage_context.persist(persist_dir=str(folder))
    return folder


def test_loading_without_the_import_fails_in_llamaindex_naming_the_import(persisted):
    run = subprocess.run(
        [sys.executable, "-c", LOAD, str(persisted)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert run.returncode == 3, run.stderr
    assert run.stdout.splitlines() == [
        "KeyError: 'hcg_causal_graph (import llama_index_hcg before load_index_from_storage)'",
        "hcg modules: []",  # it failed before any hcg code ran
    ]


def test_with_the_import_it_loads(persisted):
    storage = StorageContext.from_defaults(persist_dir=str(persisted))
    embed = HCGDefaultEmbedding(embedder=HashingEmbedder())
    loaded = load_index_from_storage(storage, embed_model=embed)
    assert isinstance(loaded, HCGIndex)
    assert loaded.as_retriever(similarity_top_k=2).retrieve(QUERY)
