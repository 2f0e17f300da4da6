"""Correct answers to each stage-9 code TODO written another way than the reference: each must earn
full marks (``tests/course/test_mutants.py`` grades them with the wrong answers). ``ALTERNATIVES`` maps a TODO id to
``{name: edits}``, the edits being text replacements of the reference module inside that TODO's function."""
from __future__ import annotations

APPLY = """        key = (event.block, event.replica)
        if event.seq <= self._last_seq.get(key, -1):
            return False
        self._last_seq[key] = event.seq
        if event.kind == STORED:
            self._holders.setdefault(event.block, {})[event.replica] = event.tier
        else:
            held = self._holders.get(event.block)
            if held is not None:
                held.pop(event.replica, None)
                if not held:
                    del self._holders[event.block]
        return True"""

OVERLAP = """    scores = [[0, 0] for _ in range(replicas)]
    # replicas still matching, and the tier they match in
    # zh: 仍在匹配的副本，以及它们正在匹配的层
    live = {r: GPU for r in range(replicas)}
    for block in blocks:
        if not live:
            break
        held = index.holders(block)
        for r, tier in list(live.items()):
            here = held.get(r)
            if here == tier:
                scores[r][0 if tier == GPU else 1] += 1
            elif tier == GPU and here == HOST:
                live[r] = HOST
                scores[r][1] += 1
            else:
                del live[r]
    return [(g, h) for g, h in scores]"""

CHOOSE = """    def predicted(r: int) -> tuple[float, int]:
        gpu, host = scores[r]
        cached = cost.cached_tokens(request, gpu + host)
        ttft = queue_ms[r] + cost.prefill_ms(request.input_tokens - cached, cached) + cost.transfer_ms(host)
        return ttft, r

    return min(range(len(scores)), key=predicted)"""

FETCH = """    if host_hit == 0:
        return False
    without = cost.cached_tokens(request, gpu_hit)
    with_tier = cost.cached_tokens(request, gpu_hit + host_hit)
    recompute = cost.prefill_ms(request.input_tokens - without, without)
    fetch = cost.transfer_ms(host_hit) + cost.prefill_ms(request.input_tokens - with_tier, with_tier)
    return fetch < recompute"""

ALTERNATIVES = {
    "s09.apply": {
        "none_for_unseen": [(APPLY, """        key = (event.block, event.replica)
        last = self._last_seq.get(key)
        if last is not None and last >= event.seq:
            return False
        self._last_seq[key] = event.seq
        held = self._holders.setdefault(event.block, {})
        if event.kind == "stored":
            held[event.replica] = event.tier
        else:
            held.pop(event.replica, None)
        if not held:
            del self._holders[event.block]
        return True""")],
        "newest_event_kept": [(APPLY, """        key = (event.block, event.replica)
        newest = self._last_seq.get(key)
        if newest is not None and not event.seq > newest:
            return False
        self._last_seq[key] = event.seq
        held = dict(self._holders.get(event.block, {}))
        if event.kind == "removed":
            held.pop(event.replica, None)
        else:
            held[event.replica] = event.tier
        if held:
            self._holders[event.block] = held
        else:
            self._holders.pop(event.block, None)
        return True""")],
        "try_except": [(APPLY, """        key = (event.block, event.replica)
        try:
            if self._last_seq[key] >= event.seq:
                return False
        except KeyError:
            pass
        self._last_seq[key] = event.seq
        if event.kind == STORED:
            self._holders.setdefault(event.block, {})[event.replica] = event.tier
            return True
        try:
            del self._holders[event.block][event.replica]
        except KeyError:
            return True
        if not self._holders[event.block]:
            del self._holders[event.block]
        return True""")],
    },
    "s09.overlap_scores": {
        "one_replica_at_a_time": [(OVERLAP, """    scores = []
    for r in range(replicas):
        gpu = host = 0
        for block in blocks:
            tier = index.holders(block).get(r)
            if host == 0 and tier == "gpu":
                gpu += 1
            elif tier == "host":
                host += 1
            else:
                break
        scores.append((gpu, host))
    return scores""")],
        "two_runs_with_while": [(OVERLAP, """    out = []
    for r in range(replicas):
        i = 0
        while i < len(blocks) and index.holders(blocks[i]).get(r) == GPU:
            i += 1
        j = i
        while j < len(blocks) and index.holders(blocks[j]).get(r) == HOST:
            j += 1
        out.append((i, j - i))
    return out""")],
        "states_per_replica": [(OVERLAP, """    gpu = [0] * replicas
    host = [0] * replicas
    state = ["gpu"] * replicas  # "gpu", "host" or "done"
    for block in blocks:
        if all(s == "done" for s in state):
            break
        held = index.holders(block)
        for r in range(replicas):
            if state[r] == "gpu" and held.get(r) == "gpu":
                gpu[r] += 1
            elif state[r] != "done" and held.get(r) == "host":
                state[r] = "host"
                host[r] += 1
            else:
                state[r] = "done"
    return list(zip(gpu, host))""")],
    },
    "s09.choose_replica": {
        "loop_strict_less": [(CHOOSE, """    best = None
    for r, (gpu, host) in enumerate(scores):
        cached = cost.cached_tokens(request, gpu + host)
        ttft = queue_ms[r] + cost.prefill_ms(request.input_tokens - cached, cached) + cost.transfer_ms(host)
        if best is None or ttft < best[0]:
            best = (ttft, r)
    return best[1]""")],
        "min_of_pairs": [(CHOOSE, """    predictions = []
    for r, (gpu, host) in enumerate(scores):
        cached = min((gpu + host) * request.block_size, request.input_tokens - 1)
        wait = queue_ms[r]
        predictions.append((wait + cost.transfer_ms(host) + cost.prefill_ms(request.input_tokens - cached, cached), r))
    return min(predictions)[1]""")],
        "sorted_ids": [(CHOOSE, """    def ttft(r):
        held = sum(scores[r])
        cached = cost.cached_tokens(request, held)
        return queue_ms[r] + cost.prefill_ms(request.input_tokens - cached, cached) + cost.transfer_ms(scores[r][1])

    return sorted(range(len(scores)), key=lambda r: (ttft(r), r))[0]""")],
    },
    "s09.fetch_or_recompute": {
        "saved_versus_transfer": [(FETCH, """    if not host_hit:
        return False
    start = cost.cached_tokens(request, gpu_hit)
    end = cost.cached_tokens(request, gpu_hit + host_hit)
    saved = (cost.prefill_ms(request.input_tokens - start, start)
             - cost.prefill_ms(request.input_tokens - end, end))
    return cost.transfer_ms(host_hit) < saved""")],
        "one_expression": [(FETCH, """    n = request.input_tokens
    a, b = cost.cached_tokens(request, gpu_hit), cost.cached_tokens(request, gpu_hit + host_hit)
    return host_hit > 0 and cost.transfer_ms(host_hit) + cost.prefill_ms(n - b, b) < cost.prefill_ms(n - a, a)""")],
        "plans_in_a_dict": [(FETCH, """    plans = {}
    for fetch, held in ((False, gpu_hit), (True, gpu_hit + host_hit)):
        cached = cost.cached_tokens(request, held)
        plans[fetch] = cost.prefill_ms(request.input_tokens - cached, cached) + (cost.transfer_ms(host_hit) if fetch else 0.0)
    return host_hit > 0 and plans[True] < plans[False]""")],
    },
}
