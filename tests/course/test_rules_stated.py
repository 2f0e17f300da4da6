"""No rule only a hidden check grades: per TODO, the rules its hidden checks grade, each found in the
title or hint of a visible check of the same TODO, in both languages.

``RULES`` lists, per TODO, a rule (its wording in English and in Chinese, as a visible check states it)
and the hidden checks that grade it. A learner whose answer breaks the rule sees it stated by
``check()`` before the grader takes points for it. The table starts with the classes of issue 41
(duplicates of one kind kept, fresh returned containers, falsy values not taken for "not given",
iterators read once, rules for every item and for the caller's own value, loops that go on past a
cached item, rules only a hidden check enforced); a TODO joins it when its rules are audited.
"""
from __future__ import annotations

import pytest

from autograder.core.i18n import text
from autograder.core.spec import load_stage

# {todo id: [(rule in English, rule in Chinese, hidden checks grading it), ...]}
RULES: dict[str, list[tuple[str, str, tuple[str, ...]]]] = {
    "s01.add_prefix": [
        ('Decide "empty" on the normalized tokens', "判断“空”要看规范化之后的 token", ("empty_iterators_store_nothing",)),
    ],
    "s01.cache_stats": [
        ("An iterator can be consumed only once", "迭代器只能消费一次", ("iterator_prompts",)),
    ],
    "s02.hash_block": [
        ("Duplicates of one kind are kept", "同一种类的重复项要保留", ("repeated_kinds",)),
    ],
    "s02.chain_keys": [
        ("Duplicates of one kind are kept", "同一种类的重复项要保留", ("repeated_kinds_in_every_block",)),
        ('A falsy value is not "not given"', "假值不等于“没有给”", ("falsy_root_seeds",)),
        ("A returned container must be fresh", "返回的容器必须是新的", ("answers_changed_by_the_caller",)),
    ],
    "s03.commit": [
        ("A key that is already cached is skipped, not a reason to stop", "已经在缓存里的 key 只是跳过，不是停下的理由",
         ("three_overlapping_admissions",)),
    ],
    "s04.popleft": [
        ("count it out of the queue once", "都要把它从队列计数里减一次", ("random_mix_popleft",)),
    ],
    "s04.release_blocks": [
        ("A caller-owned input is never mutated", "调用者传进来的东西绝不能改", ("tables_as_tuples_and_lists",)),
    ],
    "s04.pin": [
        ("Record the block's id in the set of pinned ids", "在固定 id 集合里记下块的 id",
         ("pinned_shared_block_after_both_release", "no_stale_kv_through_pins")),
    ],
    "s05.match_prefix": [
        ("The match boundary becomes a node wherever the match stops inside an edge", "边界就要成为一个节点",
         ("prompts_ending_inside_edges", "random_matches")),
    ],
    "s08.fit_threshold": [
        ("Take midpoints of consecutive distinct values only", "只取相邻的不同取值之间的中点",
         ("repeated_values_at_the_boundary", "duplicates_and_tuples", "random_small_integers")),
    ],
    "s08.tenant_extra_keys": [
        ("Duplicates of one kind are kept", "同一种类的重复项要保留", ("repeated_kinds_through_a_pool",)),
        ("The rule holds for every item and for the caller's own value", "规则对每一项都成立，对调用者自己的值也成立",
         ("spoofs_in_every_position",)),
    ],
}
CASES = [(todo, en, zh, hidden) for todo, rules in RULES.items() for en, zh, hidden in rules]


def _stated(check, lang: str) -> str:
    return f"{text(check.title, lang)}\n{text(check.hint, lang)}"


@pytest.mark.parametrize("todo_id,rule,rule_zh,hidden", CASES, ids=[f"{t}:{en[:40]}" for t, en, _, _ in CASES])
def test_rule_graded_by_hidden_checks_is_stated_by_a_visible_one(todo_id, rule, rule_zh, hidden):
    stage = load_stage(todo_id.split(".")[0])
    checks = stage.checks_for(todo_id)
    names = {c.name for c in checks if c.hidden}
    missing = [h for h in hidden if h not in names]
    assert not missing, f"{todo_id}: no hidden check {missing} (the table names the hidden checks grading '{rule}')"
    stating = [c for c in checks if not c.hidden and rule in _stated(c, "en")]
    assert stating, f"{todo_id}: no visible check states '{rule}' in its title or hint; its hidden checks " \
                    f"{list(hidden)} grade it"
    assert any(rule_zh in _stated(c, "zh") for c in stating), \
        f"{todo_id}: the visible check stating '{rule}' does not state it in Chinese ('{rule_zh}')"
