"""Named prompt sets (SPEC §7) as the project keeps them: a version per hash, the newest the one a
run uses (saved again, an earlier version becomes the newest), the words ``rwb run`` refuses a set
with, every version with the runs that used it, and which template (and set) made each call."""

from __future__ import annotations

import pytest

from tests.runs.test_run_outcomes import last_json, rwb, sample, write
from workbench.core import registry
from workbench.core.errors import InputError
from workbench.core.project import prompt_sets
from workbench.core.project.store import Store

DEFAULT_VOTE = registry.get("rcp").default_text("vote")
STRICT = DEFAULT_VOTE.replace("Answer YES or NO.", "Answer YES only if every step holds; otherwise NO.")
LENIENT = DEFAULT_VOTE.replace("Answer YES or NO.", "Answer YES unless it is plainly wrong; otherwise NO.")


def test_a_version_is_its_hash_and_saving_one_again_makes_it_the_newest(tmp_path):
    store = Store.create(tmp_path / "p.rwb")
    first, changed = prompt_sets.save(store, "strict", "rcp", {"vote": STRICT})
    assert changed.touches("prompt_sets") and first.sha256 == prompt_sets.version_of({"vote": STRICT})
    again, unchanged = prompt_sets.save(store, "strict", "rcp", {"vote": STRICT})
    assert again == first and not unchanged.touches("prompt_sets")
    second, _ = prompt_sets.save(store, "strict", "rcp", {"vote": LENIENT})
    assert prompt_sets.latest(store, "strict", "rcp").sha256 == second.sha256
    back, changed = prompt_sets.save(store, "strict", "rcp", {"vote": STRICT})  # back to the first version
    assert changed.touches("prompt_sets") and back.sha256 == first.sha256 and back.created_at == first.created_at
    assert prompt_sets.latest(store, "strict").templates == {"vote": STRICT}
    assert [s.sha256 for s in prompt_sets.all_sets(store)] == [first.sha256, second.sha256]  # one row a version


def test_a_set_is_refused_in_the_words_a_run_uses(tmp_path):
    store = Store.create(tmp_path / "p.rwb")
    with pytest.raises(InputError, match="prompt_set: no prompt set named 'strict' in this project "
                                         r"\(sets: none saved\)"):
        prompt_sets.latest(store, "strict")
    prompt_sets.save(store, "strict", "rcp", {"vote": STRICT})
    sets = prompt_sets.all_sets(store)
    with pytest.raises(InputError, match=r"no prompt set named 'lenient' in this project \(sets: strict\)"):
        prompt_sets.pick(sets, "lenient", "rcp")
    with pytest.raises(InputError, match="'strict' is a prompt set of rcp, not of arm"):
        prompt_sets.pick(sets, "strict", "arm")
    with pytest.raises(InputError, match="the name 'strict' is taken by a rcp prompt set"):
        prompt_sets.save(store, "strict", "arm", {"r1": "x"})
    with pytest.raises(InputError, match="at least one edited template"):
        prompt_sets.save(store, "empty", "rcp", {})


def test_each_call_names_its_template_and_the_set_it_came_from(tmp_path):
    project = tmp_path / "p.rwb"
    store = Store.create(project)
    saved, _ = prompt_sets.save(store, "strict", "rcp", {"vote": STRICT})
    store.close_connection()
    generate = registry.get("rcp").default_text("generate") + "{# mine #}"
    config = write(tmp_path, "c.json", {**sample("rcp-sim.json"), "prompt_set": "strict",
                                        "prompts": {"generate": generate}})
    out = rwb("run", config, "--project", str(project), "--quiet")
    assert out.returncode == 0, out.stderr
    run_id = last_json(out)["run_id"]

    store = Store.open(project)
    made = prompt_sets.run_templates(store, run_id, with_calls=True)
    assert made.prompt_set == {"name": "strict", "sha256": saved.sha256}
    assert made.set_text() == f"prompt set strict @{saved.sha256[:8]}"
    origins = {}
    for call_id, sha in made.calls.items():
        origin = made.origin(sha)
        origins.setdefault((origin.step, origin.source), set()).add(sha)
        assert prompt_sets.call_origin(store, call_id) == origin
    assert set(origins) == {("vote", prompt_sets.FROM_SET), ("generate", prompt_sets.FROM_CONFIG)}
    vote = prompt_sets.TemplateOrigin(made.steps["vote"]["sha256"], "vote", prompt_sets.FROM_SET,
                                      {"name": "strict", "sha256": saved.sha256})
    assert made.origin(vote.sha256) == vote and "prompt set strict" in vote.text()
    assert made.origin("0" * 64).source is None  # a hash the run's provenance does not name

    [use] = prompt_sets.with_runs(store)
    assert use.prompt_set.sha256 == saved.sha256 and [r["id"] for r in use.runs] == [run_id]
    source = prompt_sets.preview_source(store, "rcp")
    assert source.run_id == run_id and source.config["protocol"] == "rcp" and source.replies
    assert prompt_sets.preview_source(store, "arm").config is None
