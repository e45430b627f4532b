"""``hcg_core.bounded`` and ``hcg_core.safe_text``: the parsing bounds and the output escaping,
one property per test (the command-line rows are in tests/test_bad_inputs.py)."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
import yaml

from hcg_core import bounded
from hcg_core.bounded import BoundsError, loads_json, loads_yaml
from hcg_core.errors import CorruptFileError
from hcg_core.safe_text import mermaid_text, redact, visible, xml_text
from hcg_core.store import load_graph

HAND = Path(__file__).resolve().parents[1] / "examples" / "hand_graph"


def test_depth_limit_is_exact():
    ok = "[" * bounded.MAX_DEPTH + "]" * bounded.MAX_DEPTH
    assert loads_json(ok) is not None
    deep = "[" * (bounded.MAX_DEPTH + 1) + "]" * (bounded.MAX_DEPTH + 1)
    with pytest.raises(BoundsError, match="nesting deeper than 64"):
        loads_json(deep, path="x.json")
    objects = '{"a":' * 65 + "1" + "}" * 65
    with pytest.raises(BoundsError, match="nesting"):
        loads_json(objects)


def test_integers_are_bounded_and_floats_are_not():
    assert loads_json("1" * 40) == int("1" * 40)
    with pytest.raises(BoundsError, match="41 digits"):
        loads_json("-" + "1" * 41)
    assert loads_json("1.5e300") == 1.5e300
    with pytest.raises(BoundsError, match="digits"):
        loads_yaml("n: " + "7" * 5000)


def test_duplicate_keys_are_refused_in_json_and_yaml():
    with pytest.raises(BoundsError, match="'a' appears twice"):
        loads_json('{"a": 1, "b": {"a": 2}, "a": 3}')
    assert loads_json('{"a": 1, "b": {"a": 2}}') == {"a": 1, "b": {"a": 2}}
    with pytest.raises(BoundsError, match="'m' appears twice"):
        loads_yaml("x:\n  m: 1\n  m: 2\n")


def test_an_alias_bomb_fails_at_the_first_alias_and_the_message_is_short():
    bomb = (
        "a: &a ["
        + ",".join(["lol"] * 10)
        + "]\n"
        + "".join(
            f"{b}: &{b} [{','.join(['*' + a] * 10)}]\n"
            for a, b in zip("abcdefgh", "bcdefghi", strict=True)
        )
    )
    t0 = time.perf_counter()
    with pytest.raises(BoundsError) as err:
        loads_yaml(bomb + "z: *i\n", path="spec.yaml")
    assert time.perf_counter() - t0 < 1
    assert "alias" in str(err.value) and "spec.yaml" in str(err.value)
    assert len(str(err.value)) < 300  # never the expanded structure
    # Anchors without aliases are plain YAML and still read.
    assert loads_yaml("a: &x 1\nb: 2\n") == {"a": 1, "b": 2}


def test_yaml_still_constructs_no_objects():
    with pytest.raises(BoundsError):
        loads_yaml("!!python/object/apply:os.system ['true']")


def test_what_hcg_writes_never_holds_an_alias():
    shared = ["x", "y"]
    text = bounded.dump_yaml({"a": shared, "b": shared})
    assert "&" not in text and "*" not in text
    assert loads_yaml(text) == {"a": shared, "b": shared}


def test_size_cap_scales_with_the_manifest_counts(tmp_path, monkeypatch):
    g = tmp_path / "g"
    shutil.copytree(HAND, g)
    size = (g / "graph.json").stat().st_size
    monkeypatch.setattr(bounded, "BASE_CAP", size - 1)
    with pytest.raises(BoundsError, match="over the .*-byte cap"):
        load_graph(g)
    # Counted edges raise the cap by their allowance: the same file now loads.
    manifest = json.loads((g / "manifest.json").read_text())
    manifest["counts"] = {"edges": 7, "variables": 8, "chunks": 4}
    (g / "manifest.json").write_text(json.dumps(manifest))
    assert load_graph(g).graph.edges


def test_errors_name_the_file(tmp_path):
    p = tmp_path / "deep.json"
    p.write_text("[" * 1000 + "]" * 1000)
    with pytest.raises(CorruptFileError) as err:
        bounded.read_json(p)
    assert err.value.path == p and str(p) in str(err.value)


def test_visible_makes_terminal_controls_text():
    assert visible("ok\n\tnext") == "ok\n\tnext"
    out = visible("\x1b[31mred\x9b1m\r\u202eevil\x07")
    assert not any(c in out for c in "\x1b\x9b\r\u202e\x07")
    assert "\\x1b[31m" in out and "\\u202e" in out


def test_xml_text_and_mermaid_text():
    import xml.dom.minidom

    text = xml_text("a\x00b\x1bc\ufffe")
    xml.dom.minidom.parseString(f"<r a='{text}'>{text}</r>".encode())
    label = mermaid_text('<img src=x onerror="alert(1)"> #quot; `md` a|b')
    assert not any(c in label for c in '<>"`|') and "#35;quot;" in label


def test_redact_masks_keys_urls_and_echoed_headers():
    text = (
        "401 from http://alice:pw123@host/v1: Incorrect key sk-proj-abcdefghijklmnop; "
        "you sent {'Authorization': 'Bearer sk-proj-abcdefghijklmnop'} and my-own-key-77"
    )
    out = redact(text, ("my-own-key-77",))
    for secret in ("pw123", "alice", "abcdefghijklmnop", "my-own-key-77"):
        assert secret not in out
    assert "host/v1" in out


def test_pyyaml_reads_back_what_safe_dump_writes_for_any_text():
    # The Python side of corrections.yaml (the page's writer is tested in the browser).
    text = "a\x85b\x9bc\u2028d\ufeffe\U0001f600f\x00g"
    assert yaml.safe_load(yaml.safe_dump({"t": text}))["t"] == text
