"""No rule only a hidden check grades: for every TODO of every stage, the rules its hidden checks grade,
each found in the title or hint of a visible check of the same TODO, in both languages.

``RULES`` lists, per TODO, a rule (its wording in English and in Chinese, as a visible check states it)
and the hidden checks that grade it. A learner whose answer breaks the rule sees it stated by
``check()`` before the grader takes points for it. The TODOs and their hidden checks are read from the
stage files (``load_stage``): a new TODO, or a new hidden check, that no rule of this table covers fails
:func:`test_every_hidden_check_grades_a_stated_rule` until its rule is stated and listed here. The
table began with the classes of issue 41 (duplicates of one kind kept, fresh returned containers, falsy
values not taken for "not given", iterators read once, rules for every item and for the caller's own
value, loops that go on past a cached item, rules only a hidden check enforced).
"""
from __future__ import annotations

import pytest

from autograder.core import layout
from autograder.core.i18n import text
from autograder.core.spec import load_stage

# {todo id: [(rule in English, rule in Chinese, hidden checks grading it), ...]}
RULES: dict[str, list[tuple[str, str, tuple[str, ...]]]] = {
    # -- stage 1 --
    "s01.normalize": [
        ("A generator can be read only once", "生成器只能读一遍", ("generator_input",)),
        ("Check each token's type, never convert it", "检查每个 token 的类型，不要转换它", ("rejects_float",)),
        ("Return a new list even when a list came in", "也要返回一个新列表", ("returns_a_copy",)),
        ("An empty sequence is valid", "空序列是合法的", ("empty_is_fine",)),
        ("A falsy token is checked like any other", "假值 token 和别的 token 一样要检查", ("falsy_non_tokens_anywhere",)),
    ],
    "s01.add_prefix": [
        ('Decide "empty" on the normalized tokens', "判断“空”要看规范化之后的 token", ("empty_iterators_store_nothing",)),
        ("An empty prefix can never be reused", "空前缀永远不可能被复用", ("empty_stores_nothing",)),
        ("a list, a tuple and a generator of the same tokens are one prefix", "装着相同 token 的 list、tuple 和生成器是同一个前缀",
         ("list_and_tuple_dedupe",)),
        ("Store each prefix once, as a tuple", "每个前缀只存一次，存成 tuple", ("stores_tuple_copy",)),
    ],
    "s01.match_prefix": [
        ("A prefix matches only when all of its tokens equal the prompt's first tokens", "只有前缀的所有 token 都等于提示词开头的 token，才算匹配",
         ("longer_added_after_shorter", "prefix_longer_than_prompt", "random_prompts")),
        ("Compare with `prompt`, the list TODO 1 made", "要和 `prompt`（TODO 1 生成的列表）比较", ("tuple_prompt",)),
        ("Compare token ids, not their text", "比较的是 token id，不是它们的文本",
         ("multi_digit_token_boundaries", "random_multi_digit_prompts")),
    ],
    "s01.split_prompt": [
        ("Both parts are lists", "两部分都是 list", ("tuple_input_gives_lists",)),
        ("The first hit_len tokens are the reusable prefix, the rest is the suffix", "前 hit_len 个 token 是可复用前缀，其余是后缀",
         ("random_splits", "multi_digit_splits")),
    ],
    "s01.cache_stats": [
        ("Round the ratio to 4 decimals", "复用率保留 4 位小数", ("ratio_needs_rounding",)),
        ("3 of 4 tokens hit, 1 is left to prefill", "4 个 token 命中了 3 个，剩 1 个要 prefill",
         ("random_ledgers", "multi_digit_ledgers")),
        ("An iterator can be consumed only once", "迭代器只能消费一次", ("iterator_prompts",)),
        ("Decide on the normalized prompt, never on the caller's object", "要看规范化后的提示词来判断，不能看调用者传进来的对象",
         ("empty_iterables_as_prompts",)),
    ],
    # -- stage 2 --
    "s02.split_blocks": [
        ("Any sequence may come in", "传进来的可以是任何序列", ("tuple_and_range_input",)),
        ("consecutive, non-overlapping blocks of exactly block_size tokens", "块与块首尾相接、互不重叠，每块恰好 block_size 个 token",
         ("random_splits",)),
        ("block_size 1 gives one block per token", "block_size 为 1 时每个 token 自成一块", ("empty_and_size_one",)),
    ],
    "s02.hash_block": [
        ("hash block 0 on the root_seed argument given", "第 0 块要用传进来的 root_seed 参数做哈希", ("uses_the_given_root_seed",)),
        ("Digest the kind of each extra key as well as its value", "每个附加 key 的 kind 和 value 都要摘要进去",
         ("several_extra_keys",)),
        ("Duplicates of one kind are kept", "同一种类的重复项要保留", ("repeated_kinds",)),
        ("Frame the kind and the value of every extra key separately", "每个附加 key 的 kind 和 value 都要分别加长度帧",
         ("framing_keeps_fields_apart",)),
        ("sha256 over frame(root seed) + frame(encode_tokens(tokens))", "对 frame(根种子) + frame(encode_tokens(tokens)) 做 sha256",
         ("random_chains",)),
        ("Encode the token ids themselves", "编码的是 token id 本身", ("multi_digit_token_boundaries",)),
        ("remember each one under its parent (or root seed), its tokens and its extra keys together",
         "就必须按父 key（或根种子）、token 和附加 key 三者一起来记", ("memoized_keys_interleaved",)),
        ("Every input of a key is part of it", "key 的每一项输入都是它的一部分", ("random_calls_with_extra_keys_and_seeds",)),
        ('A falsy value is not "not given"', "假值不等于“没有给”", ("falsy_parents_are_parents",)),
    ],
    "s02.chain_keys": [
        ("Duplicates of one kind are kept", "同一种类的重复项要保留", ("repeated_kinds_in_every_block",)),
        ('A falsy value is not "not given"', "假值不等于“没有给”", ("falsy_root_seeds",)),
        ("A returned container must be fresh", "返回的容器必须是新的", ("answers_changed_by_the_caller",)),
        ("hand the root_seed given on to the hashing", "把传进来的 root_seed 交给哈希", ("root_seed_is_passed_on",)),
        ("Hash every block on the previous key", "每一块都要以前一个 key 为父 key 做哈希", ("one_token_changes_every_key",)),
        ("Key i is the hash of block i on key i - 1", "第 i 个 key 是以第 i - 1 个 key 为父 key 对第 i 块做的哈希",
         ("random_prompt_chains", "multi_digit_prompts")),
        ("No full block means no key", "没有满块就没有 key", ("no_full_block",)),
        ("never reuse the keys of an earlier call for the same tokens under other extra keys or another root seed",
         "同样的 token 换了附加 key 或根种子，绝不能沿用之前那次调用的 key", ("memoized_prefixes_under_other_salts",)),
        ("The keys of a prompt depend on its tokens, its extra keys and its root seed", "一个提示词的 key 取决于它的 token、附加 key 和根种子",
         ("random_calls_with_salts_and_seeds",)),
        ("A caller-owned input is never mutated", "调用者传进来的东西绝不能改", ("callers_lists_of_any_length",)),
    ],
    "s02.longest_cached_run": [
        ("Ask whether the table holds each key", "问的是表里有没有这个 key", ("falsy_values_are_hits",)),
        ("No keys, or an empty table, give a run of 0", "没有 key 或者表为空时，结果都是 0", ("no_keys",)),
        ("Stop at the first key that is missing", "遇到第一个缺失的 key 就停", ("random_tables",)),
        ("never copy, convert or scan the table", "绝不复制、转换或扫描整张表", ("cost_does_not_grow_with_the_table",)),
        ("never re-check the keys already counted", "不要重复检查已经数过的 key", ("cost_is_linear_in_the_run",)),
    ],
    # -- stage 3 --
    "s03.lookup": [
        ("lookup only looks", "lookup 只负责查", ("lookup_changes_nothing",)),
        ("an empty list of keys finds nothing", "空的 key 列表什么也找不到", ("tiny_prompts",)),
        ("even a fully cached prompt computes its last token", "最后一个 token 也要计算", ("tiny_prompts",)),
        ("Stop at the first key that is not cached", "遇到第一个不在缓存里的 key 就停", ("random_lookups",)),
        ("Look each key up in self.cached directly", "每个 key 直接在 self.cached 里查", ("lookup_cost_does_not_grow_with_the_pool",)),
    ],
    "s03.allocate_block": [
        ("Drop only the key of the block you hand out", "只删掉被分配出去的那个块的 key", ("evicts_only_the_reused_block",)),
        ("A reused block's old key must stop hitting", "被重新分配的块，原来的 key 必须失效", ("reuse_through_admit",)),
        ("drop a block's old key when you hand it out", "分配块时要删掉它原来的 key", ("no_stale_hits_under_churn",)),
        ("never loop over the cache map, the pool's blocks or the free queue", "不要为了找它去遍历缓存表、池里的块或空闲队列",
         ("allocate_cost_does_not_grow_with_the_pool",)),
    ],
    "s03.admit": [
        ("count the revived hits against the free blocks", "容量检查时要把被重新启用的命中块从空闲块里扣掉",
         ("revived_hits_count_against_capacity",)),
        ("A hit shares the physical block: its ref count goes up by one", "命中就是共享同一个物理块：它的引用计数加 1",
         ("hit_on_a_block_in_use", "aligned_prompt_recomputes_last_block")),
        ("Take the hits out of the free queue before you allocate the fresh blocks", "先把命中块移出空闲队列，再分配新块",
         ("hits_are_taken_before_allocating",)),
        ("take it out of the free queue and add a reference, but keep its key", "把它移出空闲队列、加一个引用，但保留它的 key",
         ("revive_again_and_again",)),
        ("Check capacity before changing anything", "先检查容量再改状态", ("random_admissions",)),
        ("Count the free blocks by len(self.free_queue)", "空闲块数用 len(self.free_queue)", ("admit_cost_does_not_grow_with_the_pool",)),
        ("Get every fresh block from self.allocate_block()", "每个新块都要通过 self.allocate_block() 拿", ("no_stale_hits_through_admit",)),
    ],
    "s03.commit": [
        ("A key that is already cached is skipped, not a reason to stop", "已经在缓存里的 key 只是跳过，不是停下的理由",
         ("three_overlapping_admissions",)),
        ("If a key is already cached, keep the block that holds it", "如果 key 已经在缓存里，就保留原来那个块",
         ("duplicate_of_a_cached_block",)),
        ("Register each block under state.keys[i]", "用 `state.keys[i]` 登记每个块", ("keys_keep_extra_keys",)),
        ("on the block and in self.cached", "块上记 key，self.cached 里也记一项", ("committed_blocks_can_be_evicted",)),
    ],
    "s03.release": [
        ("One reference less per block", "每个块引用计数减 1", ("release_everything",)),
        ("A request released before commit frees its blocks without keys", "提交之前就被释放的请求，它的块空闲且不带 key",
         ("release_before_commit",)),
        ("releasing it again raises KeyError and changes nothing", "再释放一次要抛出 KeyError，并且什么都不改", ("release_twice",)),
        ("Release every block of the table, the hits too", "块表里的每个块都要释放，命中块也不例外",
         ("released_hits_can_be_revived_again",)),
    ],
    # -- stage 4 --
    "s04.append": [
        ("never walk the list to find its end", "绝不要遍历链表去找末尾", ("append_is_constant_time",)),
        ("A block without a key joins the end of the keyless run", "没有 key 的块接到无 key 段的末尾", ("random_mix_append",)),
        ("Each cached block goes to the most recent end", "每个缓存块都接到最近使用的一端", ("random_mix_append",)),
    ],
    "s04.popleft": [
        ("count it out of the queue once", "都要把它从队列计数里减一次", ("random_mix_popleft",)),
        ("Keyless blocks (between head and mid) come out before cached ones", "无 key 的块（head 和 mid 之间）先于缓存块出来",
         ("random_mix_popleft",)),
        ("never iterate over the queue or search it", "绝不要遍历或搜索队列", ("popleft_is_constant_time",)),
        ("Hand out the least recently used block", "要交出的是紧挨 `head` 哨兵的那个最久未使用的块", ("pool_evicts_least_recently_used",)),
        ("A popped block must leave the list completely", "弹出的块必须完全离开链表", ("no_stale_kv_through_eviction",)),
    ],
    "s04.remove": [
        ("never walk the list looking for it", "绝不要遍历链表去找它", ("remove_from_the_middle_is_constant_time",)),
        ("its neighbours close the gap", "它的两个邻居直接连起来", ("random_mix_remove",)),
        ("A hit on a free cached block takes it out of the queue", "命中空闲缓存块时要把它移出队列",
         ("pool_hits_leave_the_queue", "no_stale_kv_through_revival")),
    ],
    "s04.release_blocks": [
        ("A caller-owned input is never mutated", "调用者传进来的东西绝不能改", ("tables_as_tuples_and_lists",)),
        ("Tail first means the table's order, last entry first", "“从尾部开始”指的是块表里的顺序，从最后一项开始",
         ("random_trace_lru_hits",)),
        ("Only a block whose count reaches 0 joins the free queue", "只有计数降到 0 的块才进入空闲队列",
         ("random_trace_lru_hits", "concurrent_requests_keep_invariants", "shared_path_released_by_both",
          "no_stale_kv_through_release")),
        ("so the first block ends up the most recent", "这样第一块最终是最近使用的", ("shared_path_released_by_both",)),
    ],
    "s04.pin": [
        ("Record the block's id in the set of pinned ids", "在固定 id 集合里记下块的 id",
         ("pinned_shared_block_after_both_release", "no_stale_kv_through_pins")),
        ("when its request ends it must still stay out of the queue", "它的请求结束后，它也必须留在队列之外",
         ("pinned_shared_block_after_both_release",)),
        ("A block in use is not in the free queue: pinning it only adds a reference", "正在使用的块不在空闲队列里：固定它只需加一个引用",
         ("pin_a_block_under_a_residence_hold",)),
        ("A pinned block holds a reference, so the pool never hands it out", "被固定的块持有一个引用，块池永远不会把它交出去",
         ("pinning_replays",)),
        ("At the cap, pin returns False", "达到上限时 pin 返回 False", ("zero_cap_pins_nothing",)),
        ('A falsy value is not "not given"', "假值不等于“没有给”", ("zero_cap_pins_nothing",)),
        ("Pinning a free block takes it out of the free queue", "固定一个空闲块时，要把它移出空闲队列", ("no_stale_kv_through_pins",)),
    ],
    "s04.expire": [
        ("Release every hold whose time has passed, oldest first", "从最早的开始，释放所有已到期的持有", ("residence_replays",)),
        ("two holds with the same registration time end in the same call", "登记时刻相同的两个持有在同一次调用里结束",
         ("many_holds_end_together",)),
        ("of the pool's clock", "按块池的时钟", ("expire_reads_the_pools_clock",)),
    ],
    # -- stage 5 --
    "s05._split_node": [
        ("file both parts with self._child_key", "两段都用 self._child_key 登记", ("split_with_pages",)),
        ("each node must name its real parent", "每个节点的 parent 也必须是它真正的父节点", ("split_below_an_inner_node",)),
        ("The new node copies the lock count of the node it splits", "新节点要复制被切节点的锁数", ("random_operations",)),
        ("The new node copies the last access time of the node it splits", "新节点复制被切节点的最近访问时间", ("random_operations",)),
    ],
    "s05.match_prefix": [
        ("The match boundary becomes a node wherever the match stops inside an edge", "边界就要成为一个节点",
         ("prompts_ending_inside_edges", "random_matches")),
        ("last_node covers exactly the matched tokens", "last_node 恰好覆盖匹配上的 token", ("lock_after_partial_match",)),
        ("Only whole pages match", "只有整页才算匹配", ("short_key_changes_nothing", "random_matches")),
        ("follow the child whose edge starts with the next token", "沿着边以下一个 token 开头的子节点走", ("random_matches",)),
        ("When the match ends inside an edge, split it there", "匹配停在边的中间时，就在那里切开", ("repeated_match_is_stable",)),
        ("Compare tokens as numbers, one by one", "把 token 当作数逐个比较", ("multi_digit_tokens",)),
        ("never walk over children", "绝不能遍历 children", ("match_under_many_children_is_fast",)),
    ],
    "s05.insert": [
        ("Return how many leading tokens were cached before this insert", "返回这次插入之前开头已缓存的 token 数",
         ("random_inserts", "fully_cached_insert")),
        ("A new leaf starts with no lock", "新叶子一开始没有锁", ("insert_below_a_locked_path",)),
        ("Compare tokens as numbers, one by one", "把 token 当作数逐个比较", ("insert_multi_digit_tokens",)),
        ("never walk over children", "绝不能遍历 children", ("insert_under_many_children_is_fast",)),
    ],
    "s05.inc_lock_ref": [
        ("Lock every node from node up to the root", "从 node 到根的每个节点都要加锁", ("locked_path_survives_eviction",)),
        ("only newly locked nodes move tokens", "只有新加锁的节点才挪动 token", ("random_locks",)),
        ("the root itself is never locked", "根本身从不加锁", ("lock_root",)),
        ("do not stop at a node that is locked already", "遇到已经加锁的节点不能停", ("two_requests_lock_the_same_deep_node",)),
    ],
    "s05.dec_lock_ref": [
        ("Tokens move back only when lock_ref reaches 0 after the decrement", "只有减完之后 lock_ref 变成 0，token 才挪回去",
         ("random_unlocks",)),
        ("a node back at 0 locks is evictable again", "锁数回到 0 的节点重新变成可淘汰", ("unlock_then_evict",)),
        ("Walk the whole path on every unlock", "每次解锁都要走完整条路径", ("shared_path_released_in_any_order",)),
    ],
    "s05.evict": [
        ("Pop leaves by (last_access, id)", "按 (last_access, id) 弹出叶子", ("random_evictions", "refreshed_path_goes_last")),
        ("Only leaves with lock_ref == 0 are candidates", "只有 lock_ref == 0 的叶子才是候选", ("more_than_evictable",)),
        ("Detach an evicted node completely", "被淘汰的节点要彻底摘除", ("evict_everything_then_reuse", "evicted_node_is_detached")),
        ("A parent that becomes a leaf is a candidate only if it is unlocked", "变成叶子的父节点只有在没加锁时才是候选",
         ("locked_inner_nodes_outlive_their_children",)),
        ("order candidates by (last_access, id)", "按 (last_access, id) 给候选排序", ("coarse_clock_ties",)),
    ],
    # -- stage 6 --
    "s06.suffix_positions": [
        ("positions hit_tokens to num_tokens - 1, not from 0", "位置是 hit_tokens 到 num_tokens - 1，而不是从 0 开始",
         ("long_prefix", "prefill_with_these_positions_matches")),
    ],
    "s06.slot_mapping": [
        ("Look each position itself up", "按位置本身去查", ("random_table_suffix",)),
        ("The table may come as a list or as a tensor", "块表可能是列表，也可能是张量", ("tensor_table",)),
        ("Position p is row p % B of physical block table[p // B]", "位置 p 是物理块 table[p // B] 的第 p % B 行",
         ("shuffled_prefill_matches",)),
    ],
    "s06.write_kv": [
        ("A slot that is written again holds the new row only", "再次写入的槽位只保留新的那一行", ("overwrite_keeps_neighbours",)),
        ("must end up in the pool itself", "必须写进 KV 池本身", ("writes_the_pool_itself",)),
        ("at slot slots[i] of the layer's flat view", "落在这一层平铺视图的 slots[i] 槽位上", ("cached_prefill_reads_what_was_written",)),
    ],
    "s06.paged_attention": [
        ("Read K/V through the block table", "要通过块表读 K/V", ("single_query_long_cache",)),
        ("it sees keys 0 to offset + i", "它能看到 key 0 到 offset + i", ("stale_rows_are_masked", "many_queries_after_cache")),
        ("Shift the causal mask by offset", "因果掩码要按 offset 平移", ("many_queries_after_cache", "prefill_with_this_attention_matches")),
        ("Query head h reads kv head h // group", "第 h 个 query 头读第 h // group 个 kv 头", ("many_queries_after_cache",)),
        ("Create positions, slots and the mask on q's device", "位置、槽位和掩码都要建在 q 的设备上", ("meta_tensor_table",)),
    ],
    "s06.prefill": [
        ("Commit after the model ran", "模型跑完之后要提交", ("greedy_generation_unchanged", "multi_turn_hits_previous_turn")),
        ("at their absolute positions, with the hit as attention offset", "用它们的绝对位置，并以命中长度作为 attention 的 offset",
         ("greedy_generation_unchanged", "requests_sharing_blocks")),
        ("compute only the 5 tokens after the hit", "只计算命中之后的 5 个 token", ("partial_tail_is_computed",)),
    ],
    # -- stage 7 --
    "s07.latency_summary": [
        ("A percentile is read from the sorted values", "分位数要从排好序的值里读出来", ("long_tail_thousand",)),
        ("One value: every percentile is that value", "只有一个值时，每个分位数都是这个值", ("single_value",)),
        ("sort a copy: the caller's list keeps its order", "排序时要排副本：调用者的列表保持原来的顺序", ("input_left_unchanged",)),
        ("equal neighbours give that value", "两个相等的相邻值之间插值还是这个值", ("repeated_values",)),
        ("The key is written from the percentile's value, not from its type", "键由分位数的数值写出，而不是由它的类型决定",
         ("computed_percentiles",)),
        ('A falsy value is not "not given"', "假值不等于“没有给”", ("empty_percentile_lists",)),
    ],
    "s07.cache_accounting": [
        ("saved_fraction is saved FLOPs over the FLOPs without the cache", "saved_fraction 是省下的 FLOPs 除以不开缓存时的 FLOPs",
         ("many_requests_qwen_shape",)),
        ("An empty ledger: zero requests and tokens, hit_rate and saved_fraction 0.0", "账目为空时：请求数和 token 数都是 0",
         ("empty_ledger",)),
        ("requests_with_hit counts the requests with at least one hit token", "requests_with_hit 数的是至少命中一个 token 的请求",
         ("no_hits_at_all",)),
    ],
    "s07.predict_ttft": [
        ("the attention rate is read at the whole context", "attention 速率要按整个上下文读取", ("qwen_shape_many_sizes", "slow_attention")),
        ("plus cal.other_s(computed, cached)", "再加上 cal.other_s(computed, cached)", ("overhead_dominates_tiny",)),
        ("head FLOPs at cal.head_flops_per_s", "输出头 FLOPs 用 cal.head_flops_per_s", ("overhead_dominates_tiny",)),
    ],
    "s07.choose_setting": [
        ("compare the SLO's metrics in the SLO's order", "按 SLO 里指标的顺序比较", ("ties_at_equal_pool",)),
        ("the first one, whatever its name", "先比第一个，不管它叫什么", ("tie_break_uses_the_slos_first_metric",)),
        ("the order of the measurements must not matter", "测量结果的排列顺序不能影响答案", ("order_does_not_matter",)),
        ("A value equal to its bound meets the SLO", "值恰好等于上限也算满足 SLO", ("bound_is_inclusive_nan_is_not",)),
        ("return a copy of the chosen measurement", "返回被选中测量结果的副本", ("returns_a_copy",)),
        ('A falsy value is not "not given"', "假值不等于“没有给”", ("zero_bounds_in_a_sweep",)),
    ],
    # -- stage 8 --
    "s08.birthday_search": [
        ("stop at the collision (the stream may be endless)", "碰到碰撞就停（候选流可能没有尽头）", ("stops_at_the_collision",)),
        ("compute each one's key once", "每个只算一次 key", ("one_key_per_candidate",)),
        ("Remember the first block seen under each key", "记住每个 key 第一次出现时对应的块", ("earlier_is_the_first_holder",)),
        ("Compare each candidate's key with the keys of *all* earlier candidates", "把每个候选块的 key 和前面*所有*候选块的 key 比较",
         ("random_widths",)),
        ("with no candidate or a single one there is no collision", "一个候选块也没有、或者只有一个时，没有碰撞", ("empty_stream",)),
        ("The same block sent twice is not a collision", "同一个块出现两次不算碰撞", ("many_repeats",)),
        ("The time grows linearly with the tries", "耗时随尝试次数线性增长", ("long_search_with_repeats",)),
    ],
    "s08.fit_threshold": [
        ("Take midpoints of consecutive distinct values only", "只取相邻的不同取值之间的中点",
         ("repeated_values_at_the_boundary", "duplicates_and_tuples", "random_small_integers")),
        ("try every midpoint of neighbouring distinct values", "逐个试相邻不同取值的中点", ("one_midpoint",)),
        ("Count errors as samples, each one once", "按样本个数数错误，每个样本只算一次", ("unbalanced_samples",)),
        ("return the smallest of them", "返回其中最小的", ("random_calibrations",)),
        ("take the midpoint with the fewest", "取判错最少的中点", ("random_calibrations",)),
        ("A caller-owned input is never mutated", "调用者传进来的东西绝不能改", ("random_lists_left_alone",)),
    ],
    "s08.detect_sharing": [
        ("Detected means p-value strictly below the alpha passed in", "detected 的意思是 p 值严格小于传入的 alpha", ("alpha_is_used",)),
        ("with SciPy's default method", "用 SciPy 的默认方法", ("small_samples",)),
        ("The test is one-sided", "这是单侧检验", ("crossing_cdfs", "unequal_sizes")),
    ],
    "s08.tenant_extra_keys": [
        ("Duplicates of one kind are kept", "同一种类的重复项要保留", ("repeated_kinds_through_a_pool",)),
        ("The rule holds for every item and for the caller's own value", "规则对每一项都成立，对调用者自己的值也成立",
         ("spoofs_in_every_position",)),
        ("put the tenant string itself into the key", "把租户字符串本身放进 key", ("keys_are_reproducible",)),
        ("leave the caller's keys as they were", "不改调用者的 key", ("caller_list_is_not_changed",)),
        ("from the request's keys (a list or a tuple)", "根据请求的 key（列表或元组）", ("tuple_and_empty_extra_keys",)),
        ("compute them afresh for every call", "每次调用都重新算", ("salts_change_within_one_sequence",)),
        ("Build a new list on every call", "每次调用都根据请求的 key（列表或元组）新建一个列表", ("results_are_independent",)),
    ],
    # -- stage 9 --
    "s09.apply": [
        ("Keep the last sequence number per (block, replica)", "按（块, 副本）记录最后的序号",
         ("shuffled_and_duplicated_stream",)),
        ("changes nothing and returns False", "不改变任何东西，并返回 False", ("shuffled_and_duplicated_stream",)),
        ("Remember the sequence number of removals too", "removed 事件的序号也要记住", ("removal_before_any_store",)),
    ],
    "s09.overlap_scores": [
        ("Stop counting at the first block the replica does not hold", "在副本第一个没有的块处停止计数",
         ("random_fleets",)),
        ("Count GPU blocks from the start, then the host blocks right after them", "先从头数 GPU 上的块，再单独数紧接其后在主机内存层的块",
         ("random_fleets",)),
        ("never scan the index", "绝不要扫描整个索引", ("reads_stop_with_the_matches",)),
    ],
    "s09.choose_replica": [
        ("Add the replica's queue wait to its prediction", "把副本的排队等待加进预测", ("random_choices",)),
        ("Add the transfer time of the host blocks", "加上 host 块的传输时间", ("random_choices",)),
        ("Ties go to the lowest replica id", "并列时选编号最小的副本", ("ties_among_many",)),
    ],
    "s09.fetch_or_recompute": [
        ("Compare the transfer plus the prefill left against recomputing", "用“传输 + 剩余 prefill”和“重算”比较",
         ("bandwidth_sweep",)),
        ("the last token is always computed", "最后一个 token 也总要计算", ("short_last_block",)),
    ],
}
CASES = [(todo, en, zh, hidden) for todo, rules in RULES.items() for en, zh, hidden in rules]
# Every code TODO of every built stage, from the stage files (a quiz has no hidden checks).
TODOS = [t.id for sid in layout.built_stages() for t in load_stage(sid).todos if not t.id.endswith(".quiz")]


def _stated(check, lang: str) -> str:
    return f"{text(check.title, lang)}\n{text(check.hint, lang)}"


@pytest.mark.parametrize("todo_id", TODOS)
def test_every_hidden_check_grades_a_stated_rule(todo_id):
    hidden = [c.name for c in load_stage(todo_id.split(".")[0]).checks_for(todo_id) if c.hidden]
    listed = {h for _, _, names in RULES.get(todo_id, ()) for h in names}
    unlisted = [h for h in hidden if h not in listed]
    assert not unlisted, f"{todo_id}: hidden checks {unlisted} grade a rule this table does not list; state it in a " \
                         f"visible check's title or hint (both languages) and add it to RULES"


def test_the_table_names_only_todos_of_the_stages():
    assert sorted(set(RULES) - set(TODOS)) == []


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
