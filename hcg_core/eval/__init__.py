"""Evaluation: lexical answer recall at a word budget, a runner over systems, and baselines."""

from .baselines import bm25_system, fill_budget, vector_system, word_windows
from .cli import add_eval_arguments, run_eval
from .metric import DEFAULT_BUDGET, answer_recall, content_words, context_words
from .runner import EvalReport, QAItem, evaluate, load_questions

__all__ = [
    "DEFAULT_BUDGET",
    "EvalReport",
    "QAItem",
    "add_eval_arguments",
    "answer_recall",
    "bm25_system",
    "content_words",
    "context_words",
    "evaluate",
    "fill_budget",
    "load_questions",
    "run_eval",
    "vector_system",
    "word_windows",
]
