"""The adapters' LLM wrappers with the pipeline's response schemas (issue 25, item 7): LangChain's
own ``with_structured_output`` (a tool-calling chat model) and LlamaIndex's own
``astructured_predict`` (its text program) turn the schemas into tools or prompts and give back
validated replies: rejections as numbers, an entity from its dimension's enum, a new entity
named apart."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from llama_index.core.base.llms.types import CompletionResponse, CompletionResponseGen, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.llms.custom import CustomLLM
from llama_index.core.program.function_program import get_function_tool

from hcg_core.graph_build.llm_tiers import tier1_model, tier2_model
from hcg_core.spec.generate import dimensions_model, variables_model
from langchain_hcg._models import LangChainStructuredLLM
from llama_index_hcg._models import LlamaIndexStructuredLLM

TIER2 = tier2_model(["NutrientLoad"], ["BloomSeverity"], 3, {"lake": ["Lake Erie", "Lake Taihu"]})
REPLY = {
    "kept": [
        {
            "candidate": 1,
            "effect": "increases",
            "mechanism": "phosphorus feeds the bloom",
            "confidence": 0.9,
            "evidence": "a higher spring phosphorus load leads to a more severe bloom",
        }
    ],
    "rejected": [2, 3],
    "new_edges": [
        {
            "source": {"metric": "NutrientLoad", "entities": {"lake": "Lake Erie"}},
            "target": {
                "metric": "BloomSeverity",
                "entities": {"lake": ""},
                "new_entities": ["Sandusky Bay"],
            },
            "mechanism": "the bay gets the load",
        }
    ],
}
MSGS = [{"role": "user", "content": "Judge the candidates.\n\nResponse schema name: Tier2Reply"}]


def check(out: Any) -> None:
    assert isinstance(out, TIER2)
    assert [j.candidate for j in out.kept] == [1] and out.rejected == [2, 3]
    assert out.new_edges[0].source.entities.lake == "Lake Erie"
    assert out.new_edges[0].target.new_entities == ["Sandusky Bay"]


def test_the_schemas_convert_to_tools_with_their_enums_and_limits():
    models = [
        TIER2,
        tier1_model("NutrientLoad", ["BloomSeverity", "FishMortality"]),
        dimensions_model(6, infer_domain=True, infer_outcomes=True),
        variables_model(["NutrientLoad"], {"lake": ["Lake Erie"]}),
    ]
    for model in models:
        lc = convert_to_openai_tool(model)["function"]
        li = get_function_tool(model).metadata.to_openai_tool()["function"]
        assert lc["name"] == li["name"] == model.__name__
        assert lc["parameters"]["properties"] and li["parameters"]["properties"]
    params = convert_to_openai_tool(TIER2)["function"]["parameters"]
    text = str(params)
    assert "'maxItems': 3" in text and "'maxItems': 8" in text
    assert "'', 'Lake Erie', 'Lake Taihu'" in text  # the lake slot's enum reaches the tool


class ToolCallingChat(BaseChatModel):
    """A chat model that answers every request with one tool call carrying ``args``: what a
    provider's structured output does, through LangChain's own ``with_structured_output``."""

    args: dict
    tool: str = ""

    @property
    def _llm_type(self) -> str:
        return "tool-calling-test"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        name = convert_to_openai_tool(tools[0])["function"]["name"]
        return self.model_copy(update={"tool": name})

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any):
        call = {"name": self.tool, "args": self.args, "id": "call-1", "type": "tool_call"}
        return ChatResult(generations=[ChatGeneration(message=AIMessage("", tool_calls=[call]))])


async def test_langchain_with_structured_output_gives_the_new_reply_shapes():
    out = await LangChainStructuredLLM(ToolCallingChat(args=REPLY)).acomplete(MSGS, TIER2)
    check(out)


class JsonLLM(CustomLLM):
    """A LlamaIndex LLM (no function calling) that replies with one JSON text and records the
    prompts of the framework's own structured-output program."""

    reply: str = ""
    prompts: list[str] = []

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="json-test")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        self.prompts.append(prompt)
        return CompletionResponse(text=self.reply)

    @llm_completion_callback()
    def stream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseGen:
        yield CompletionResponse(text=self.reply, delta=self.reply)


async def test_llamaindex_astructured_predict_gives_the_new_reply_shapes():
    import json

    llm = JsonLLM(reply=json.dumps(REPLY), prompts=[])
    out = await LlamaIndexStructuredLLM(llm).acomplete(MSGS, TIER2)
    check(out)
    assert llm.prompts and "Tier2Kept" in llm.prompts[0]  # the program sent the schema
