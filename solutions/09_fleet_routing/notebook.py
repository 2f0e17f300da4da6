# %% [markdown] lang="en"
# # Stage 9 · Routing across replicas and a KV tier
#
# **Goal:** every stage so far ran one engine. Production prefix caching runs many replicas behind a
# router, and a request's prefix is reused only if the router sends it where that prefix is cached. In
# this stage you build the router's side: an index of what each replica holds, fed by the KV events
# replicas emit; the overlap of a request with each replica; a router that predicts the time to first
# token (TTFT) of each choice; and the decision to fetch KV from a host-memory tier or recompute it.
#
# The designs you meet here are in production: Mooncake (Qin et al., FAST 2025, whose traces you have
# replayed since stage 4) schedules each request by the prefix a prefill instance holds *and* its queue,
# with KV pooled in DRAM behind the GPUs; llm-d scores replicas with an approximate index (what the router
# itself sent where) or a precise one fed by vLLM's KV events; SGLang's router keeps a tree of what it
# routed per worker; NVIDIA Dynamo's KV router weighs each worker's overlap against its load; LMCache adds
# tiers behind the GPU.
#
# *How this notebook works.* Run the setup cell first. Each TODO sits in its own code cell; replace
# `raise NotImplementedError()` with your code, re-run that cell, then run the `check(...)` cell under it.
# `hint("s09.apply")` (any TODO id) gives the next of three hints. **Only the TODO cells are graded**
# (everything else comes from the course when grading): keep any helper inside them. Time here is
# **simulated**: a request costs stage 7's `predict_ttft` under one fixed calibration, so every number
# below is the same on every machine and every run.
#
# | TODO | function | what it does |
# |---|---|---|
# | 1 | `KVIndex.apply` | fold a replica's KV event into a global index, whatever order it arrives in |
# | 2 | `overlap_scores` | each replica's leading blocks of a request, on its GPU and in its host tier |
# | 3 | `choose_replica` | the replica with the lowest predicted TTFT, with a tie rule |
# | 4 | `fetch_or_recompute` | fetch host-tier blocks only when that beats recomputing them |
# | 5 | `quiz` | the concept quiz |
#
# ## Learning objectives
# After this stage you can:
# 1. keep a global index of a fleet's caches consistent under late, duplicated and reordered KV events;
# 2. score replicas by the prefix they hold, per tier, in time that does not grow with the fleet's cache;
# 3. route by predicted TTFT and explain why pure affinity hot-spots a replica and an approximate index drifts;
# 4. decide per request whether fetching KV from a host tier beats recomputing it, and where that flips.
#
# ## Prerequisites
# - [Stage 2](02_block_hash.ipynb): chained block keys (a block's id names its whole prefix).
# - [Stage 4](04_eviction.ipynb): LRU eviction, tail first; the Mooncake traces.
# - [Stage 7](07_serving.ipynb): TTFT and the calibrated `predict_ttft`.
#
# **Time:** about 75 min.

# %% [markdown] lang="zh"
# # 第 9 阶段 · 多副本路由与 KV 分层
#
# **目标：** 之前每个阶段都只有一个引擎。生产环境的前缀缓存是一个路由器后面挂着很多副本（replica），
# 只有路由器把请求发到缓存着它前缀的那个副本上，前缀才能被复用。本阶段你来实现路由器这一侧：一份记录
# 每个副本持有哪些块的索引（由副本发出的 KV 事件驱动）；请求与每个副本的重叠；一个预测每种选择的
# 首 token 延迟（TTFT）的路由器；以及从主机内存层取回 KV 还是重新计算的决策。
#
# 这里遇到的设计都在生产中使用：Mooncake（Qin 等，FAST 2025；你从第 4 阶段起回放的就是它的 trace）按
# prefill 实例持有的前缀*和*它的队列来调度请求，并把 KV 汇集在 GPU 后面的 DRAM 里；llm-d 用近似索引
# （路由器自己记下发了什么到哪里）或由 vLLM 的 KV 事件驱动的精确索引给副本打分；SGLang 的路由器为每个
# worker 维护一棵记录已路由内容的树；NVIDIA Dynamo 的 KV 路由器把每个 worker 的重叠和负载放在一起权衡；
# LMCache 在 GPU 后面再加几层存储。
#
# *这个笔记本怎么用。* 先运行 setup 单元。每个 TODO 占一个代码单元：把 `raise NotImplementedError()`
# 换成你的代码，重新运行这个单元，再运行它下面的 `check(...)` 单元。`hint("s09.apply")`（换成任意 TODO
# 的编号）每调用一次给出下一条提示，一共三条。**只有 TODO 单元会被评分**（评分时其余单元都用课程自带的
# 版本），所以辅助函数要写在 TODO 单元里面。这里的时间是**模拟**的：一个请求的代价是第 7 阶段的
# `predict_ttft` 在一份固定校准下的预测值，所以下面每个数字在任何机器、任何一次运行中都相同。
#
# | TODO | 函数 | 作用 |
# |---|---|---|
# | 1 | `KVIndex.apply` | 把副本的 KV 事件合入全局索引，不管它以什么顺序到达 |
# | 2 | `overlap_scores` | 每个副本持有请求开头多少个块：在 GPU 上和在主机内存层 |
# | 3 | `choose_replica` | 选预测 TTFT 最低的副本，并有明确的并列规则 |
# | 4 | `fetch_or_recompute` | 只有取回比重算快时，才从主机内存层取回块 |
# | 5 | `quiz` | 概念小测 |
#
# ## 学习目标
# 学完本阶段，你能够：
# 1. 在 KV 事件迟到、重复、乱序的情况下，保持整个集群缓存的全局索引一致；
# 2. 按副本持有的前缀（分层）给副本打分，耗时不随集群缓存的大小增长；
# 3. 按预测的 TTFT 路由，并解释为什么纯亲和路由会造成热点副本、近似索引会逐渐失准；
# 4. 对每个请求判断从主机内存层取回 KV 是否比重算更快，以及这个判断在哪里翻转。
#
# ## 前置知识
# - [第 2 阶段](02_block_hash.ipynb)：链式块 key（一个块的 id 代表它的整个前缀）。
# - [第 4 阶段](04_eviction.ipynb)：LRU 淘汰（从尾部开始）；Mooncake trace。
# - [第 7 阶段](07_serving.ipynb)：TTFT 和校准过的 `predict_ttft`。
#
# **用时：** 约 75 分钟。

# %% setup="course"
from workbook.predictions import why
from autograder.textwidth import pad

# %% [markdown] lang="en"
# ## The fleet
#
# `workbook.fleet` simulates the fleet. Each replica is a first-in-first-out server with a GPU block cache
# (LRU, tail first, as in stage 4) and, optionally, a host-memory tier that receives the GPU's evictions.
# A request's TTFT is its wait in the queue plus the prefill of the tokens the replica does not hold plus
# the transfer of the blocks it fetches from host memory. Whenever a replica's cache changes it emits a
# `KVEvent`: `stored` or `removed`, with the replica, the tier, the block id and a sequence number that
# counts that replica's events. The router receives them through an `EventStream` that may deliver them
# late, twice or out of order. The model is Llama-3-8B's shape; the rates are fixed, of the order of a
# data-center GPU, not measured on your machine. One block of 512 tokens holds 64 MiB of KV.

# %% [markdown] lang="zh"
# ## 集群
#
# `workbook.fleet` 模拟整个集群。每个副本是一个先进先出的服务器，带一个 GPU 块缓存（LRU，从尾部淘汰，
# 同第 4 阶段），还可以带一个接收 GPU 淘汰块的主机内存层。一个请求的 TTFT = 排队等待 + 副本没有的那些
# token 的 prefill + 从主机内存取回的块的传输时间。副本的缓存每变化一次，就发出一个 `KVEvent`：`stored`
# 或 `removed`，带有副本、层、块 id 和一个序号（该副本事件的计数）。路由器通过 `EventStream` 收到这些
# 事件，而它可能让事件迟到、重复或乱序。模型取 Llama-3-8B 的形状；速率是固定的，与数据中心 GPU 同一
# 量级，并不是在你的机器上测的。一个 512 token 的块装着 64 MiB 的 KV。

# %%
import random

from workbook.fleet import FLEET_COST, LeastLoaded, Replica, RoundRobin, load_requests, replay_assignment, simulate

# The first 3,000 requests of Mooncake's conversation trace (about 16 minutes of traffic).
# zh: Mooncake conversation trace 的前 3,000 个请求（大约 16 分钟的流量）。
requests = load_requests("conversation", limit=3000)
# Per replica: 1,000 GPU blocks (62.5 GiB of KV) and 8,000 host blocks (500 GiB of DRAM).
# zh: 每个副本：1,000 个 GPU 块（62.5 GiB 的 KV）和 8,000 个主机内存块（500 GiB 的 DRAM）。
FLEET = {"gpu_blocks": 1000, "host_blocks": 8000}
print(tr(f"{len(requests)} requests over {requests[-1].arrival_ms / 60e3:.1f} min, "
         f"{sum(r.input_tokens for r in requests) / len(requests):,.0f} prompt tokens on average",
         f"{len(requests)} 个请求，历时 {requests[-1].arrival_ms / 60e3:.1f} 分钟，"
         f"平均每个提示词 {sum(r.input_tokens for r in requests) / len(requests):,.0f} 个 token"))
print(tr(f"prefill of 12,000 tokens: {FLEET_COST.prefill_ms(12000):.0f} ms; the last 512 after 11,488 cached: "
         f"{FLEET_COST.prefill_ms(512, 11488):.0f} ms; one block over 25 GB/s: {FLEET_COST.transfer_ms(1):.1f} ms",
         f"12,000 个 token 的 prefill：{FLEET_COST.prefill_ms(12000):.0f} ms；缓存 11,488 个之后算最后 512 个："
         f"{FLEET_COST.prefill_ms(512, 11488):.0f} ms；以 25 GB/s 传一个块：{FLEET_COST.transfer_ms(1):.1f} ms"))

# %% [markdown] lang="en"
# ## TODO 1 · A KV-event index
#
# The precise router keeps one index for the whole fleet: block id → {replica: tier}. Events come from
# many replicas over a network: a `stored` may arrive after the `removed` that followed it, or twice. Each
# replica numbers its own changes, so for one block on one replica the larger sequence number is the newer
# truth. `holders` and the tables are given; write `apply`.

# %% [markdown] lang="zh"
# ## TODO 1 · KV 事件索引
#
# 精确路由器为整个集群维护一份索引：块 id → {副本: 层}。事件从许多副本经过网络发来：一个 `stored` 可能在
# 紧随其后的 `removed` 之后才到，也可能到两次。每个副本给自己的变化编号，所以对某个副本上的某个块，
# 序号大的才是较新的状态。`holders` 和两张表是给定的；你来写 `apply`。

# %% solution="KVIndex"

# %% check="s09.apply"

# %% [markdown] lang="en"
# ### Does the index survive a bad network?
# Three replicas serve 300 chained prompts; their events are shuffled, and a third of them delivered twice.
# The cell compares your index with what the replicas really hold, and with a naive index that applies
# events in arrival order.

# %% [markdown] lang="zh"
# ### 索引扛得住糟糕的网络吗？
# 三个副本服务 300 个链式提示词；它们的事件被打乱，其中三分之一还被投递了两次。下面的单元把你的索引和
# 副本实际持有的内容比较，也和一个按到达顺序直接应用事件的朴素索引比较。

# %%
with demo("s09.apply"):
    rng = random.Random(0)
    fleet = [Replica(r, gpu_blocks=40, host_blocks=60) for r in range(3)]
    events = []
    for i in range(300):
        root = rng.randrange(30)
        events += fleet[rng.randrange(3)].admit([1000 * root + j for j in range(rng.randint(1, 12))], float(i))
    delivered = events + rng.sample(events, len(events) // 3)
    rng.shuffle(delivered)
    truth = {}
    for rep in fleet:
        for tier, blocks in (("gpu", rep.gpu), ("host", rep.host)):
            for b in blocks:
                truth.setdefault(b, {})[rep.rid] = tier
    index, naive = KVIndex(), {}
    for e in delivered:
        index.apply(e)
        if e.kind == "stored":
            naive.setdefault(e.block, {})[e.replica] = e.tier
        else:
            naive.get(e.block, {}).pop(e.replica, None)
    every = set(truth) | {e.block for e in events}
    wrong = sum(index.holders(b) != truth.get(b, {}) for b in every)
    wrong_naive = sum(naive.get(b, {}) != truth.get(b, {}) for b in every)
    print(tr(f"{len(delivered)} deliveries of {len(events)} events; blocks held: {len(truth)}",
             f"{len(events)} 个事件共投递 {len(delivered)} 次；被持有的块：{len(truth)} 个"))
    print(tr(f"blocks your index gets wrong: {wrong}; the naive index: {wrong_naive}",
             f"你的索引记错的块：{wrong} 个；朴素索引：{wrong_naive} 个"))

# %% [markdown] lang="en"
# ## TODO 2 · Overlap per replica and tier
#
# A block id names its whole prefix, so a replica can reuse block *i* only if it reuses every block before
# it: its match is a run from the start. With a host tier the run may continue there: the first `gpu`
# blocks are on the GPU, the next `host` ones in host memory, to be fetched. Read only the request's blocks
# from the index (never scan it): the cost of routing then does not grow with how much the fleet caches.

# %% [markdown] lang="zh"
# ## TODO 2 · 每个副本、每一层的重叠
#
# 一个块 id 代表它的整个前缀，所以副本只有在复用了第 *i* 块之前的所有块时才能复用第 *i* 块：匹配是从头
# 开始的一段。有主机内存层时，这一段还可以在那里延续：前 `gpu` 个块在 GPU 上，后面 `host` 个在主机内存里，
# 需要取回。只从索引中读取请求自己的块（绝不扫描整个索引）：这样路由的代价就不会随集群缓存的大小增长。

# %% solution="overlap_scores"

# %% check="s09.overlap_scores"

# %% [markdown] lang="en"
# ## TODO 3 · Route by predicted TTFT
#
# Pure affinity sends a request to the replica with the largest overlap; least-loaded to the shortest
# queue. Neither is what the user waits for. Predict each replica's TTFT (its queue, the prefill of what
# it does not hold, the transfer of what its host tier holds) and take the lowest; ties go to the lowest
# id. The cost model (`cost.prefill_ms`, `cost.transfer_ms`, `cost.cached_tokens`) is given.

# %% [markdown] lang="zh"
# ## TODO 3 · 按预测的 TTFT 路由
#
# 纯亲和路由把请求发给重叠最多的副本；最少负载路由发给队列最短的副本。两者都不是用户真正在等的东西。
# 预测每个副本的 TTFT（排队 + 它没有的部分的 prefill + 它主机内存层所持有部分的传输），取最低的；并列时
# 选编号最小的。成本模型（`cost.prefill_ms`、`cost.transfer_ms`、`cost.cached_tokens`）是给定的。

# %% solution="choose_replica"

# %% check="s09.choose_replica"

# %% [markdown] lang="en"
# The routers built from your TODOs: `PrefixRouter` (the event-fed index, your overlap and your router),
# `Affinity` (the largest overlap, blind to queues) and `ApproximateRouter` (no events: its own LRU record
# of what it sent where, as large as a replica's GPU cache, read as if the replica still held it).

# %% [markdown] lang="zh"
# 用你的 TODO 搭出的路由器：`PrefixRouter`（事件驱动的索引 + 你的重叠计算 + 你的路由器）、`Affinity`
# （只看最大重叠，不看队列）和 `ApproximateRouter`（不看事件：自己记一份发往各副本的 LRU 记录，大小等于
# 一个副本的 GPU 缓存，并假定副本仍持有记录里的块）。

# %% given="_checked_scores,_checked_choice,PrefixRouter,Affinity,ApproximateRouter"

# %% [markdown] lang="en"
# ### Predict, then run
# Five routers on 2, 4 and 8 replicas. At 8 replicas, which one loads its busiest replica the most above
# the mean (the highest balance, max/mean of per-replica work)? A: round-robin, B: least-loaded,
# C: affinity, D: approximate, E: prefix-aware. Write a letter.

# %% [markdown] lang="zh"
# ### 先预测，再运行
# 五种路由器，分别跑 2、4、8 个副本。8 个副本时，哪一种让最忙的副本超出平均最多（负载均衡度最高，即各副本
# 工作量的最大值 / 平均值）？A：轮询，B：最少负载，C：亲和，D：近似索引，E：前缀感知。写一个字母。

# %%
# your prediction: a letter
# zh: 你的预测：一个字母
my_guess = None

# %%
with demo("s09.apply", "s09.overlap_scores", "s09.choose_replica"):
    runs, approx = [], {}
    for n in (2, 4, 8):
        approx[n] = ApproximateRouter(FLEET["gpu_blocks"])
        for policy in (RoundRobin(), LeastLoaded(), Affinity(), approx[n], PrefixRouter()):
            runs.append(simulate(requests, policy, n, **FLEET))
    header = [tr("replicas", "副本数"), tr("router", "路由器"), tr("hit rate", "命中率"), "TTFT p50", "TTFT p90",
              "TTFT p99", tr("balance", "均衡度")]
    widths = [8, 14, 10, 10, 10, 10, 8]
    print("  ".join(pad(h, w) for h, w in zip(header, widths)))
    for run in runs:
        row = [str(run.replicas), run.policy, f"{run.hit_rate:.1%}", f"{run.ttft(50):.0f}", f"{run.ttft(90):.0f}",
               f"{run.ttft(99):.0f}", f"{run.balance:.2f}"]
        print("  ".join(pad(c, w) for c, w in zip(row, widths)))
    at8 = [run for run in runs if run.replicas == 8]
    hottest = max(at8, key=lambda run: run.balance)
    reveal(my_guess, "ABCDE"[at8.index(hottest)], why("s09.my_guess", balance=hottest.balance))

# %% [markdown] lang="en"
# ### Affinity's hot spot, and the approximate index's drift
# First, per-replica work at 8 replicas (seconds of prefill and transfer). Then a fleet without a host tier,
# where the approximate router's record is as large as a replica's GPU cache, or four times larger (a
# router rarely knows each replica's cache size): how often did it believe the chosen replica held more
# leading blocks than it did, in the first and the last thousand requests? Last, the event-fed index when
# its events arrive late, out of order and duplicated.

# %% [markdown] lang="zh"
# ### 亲和路由的热点，以及近似索引的失准
# 先看 8 个副本时各副本的工作量（prefill 加传输的秒数）。再看一个没有主机内存层的集群：近似路由器的记录和
# 一个副本的 GPU 缓存一样大，或者大四倍（路由器很少知道每个副本的缓存有多大）。在前一千个和最后一千个
# 请求里，它有多少次认为所选副本持有的开头块比实际的多？最后看事件迟到、乱序、重复时事件驱动的索引。

# %%
with demo("s09.apply", "s09.overlap_scores", "s09.choose_replica"):
    for run in at8:
        print(pad(run.policy, 14), " ".join(f"{w / 1e3:5.0f}" for w in run.work_ms))
    gpu_only = {"gpu_blocks": FLEET["gpu_blocks"]}
    for size in (1, 4):
        router = ApproximateRouter(size * FLEET["gpu_blocks"])
        run = simulate(requests, router, 8, **gpu_only)
        over = [sum(b > s.gpu_hit for b, s in zip(router.beliefs[part], run.served[part])) / 1000
                for part in (slice(0, 1000), slice(-1000, None))]
        print(tr(f"record {size}x the GPU cache: hit rate {run.hit_rate:.1%}, TTFT p90 {run.ttft(90):.0f} ms; "
                 f"believed too much for {over[0]:.1%} of the first 1,000 requests, {over[1]:.1%} of the last",
                 f"记录是 GPU 缓存的 {size} 倍：命中率 {run.hit_rate:.1%}，TTFT p90 {run.ttft(90):.0f} ms；"
                 f"前 1,000 个请求中 {over[0]:.1%} 高估了持有量，最后 1,000 个中 {over[1]:.1%}"))
    precise = simulate(requests, PrefixRouter(), 8, **gpu_only)
    print(tr(f"event-fed index: hit rate {precise.hit_rate:.1%}, TTFT p90 {precise.ttft(90):.0f} ms",
             f"事件驱动的索引：命中率 {precise.hit_rate:.1%}，TTFT p90 {precise.ttft(90):.0f} ms"))
    # the event-fed index on the fleet with a host tier, its events late, jittered and 20% duplicated
    # zh: 带主机内存层的集群上，事件驱动的索引收到的事件迟到、有抖动、20% 重复
    for late_s in (0, 1, 60):
        run = simulate(requests, PrefixRouter(), 8, event_delay_ms=1e3 * late_s, event_jitter_ms=500.0 * late_s,
                       duplicate_rate=0.2, seed=1, **FLEET)
        print(tr(f"events {late_s:2d} s late (+ up to {late_s / 2:g} s jitter): hit rate {run.hit_rate:.1%}, "
                 f"TTFT p90 {run.ttft(90):.0f} ms",
                 f"事件迟到 {late_s:2d} 秒（另加最多 {late_s / 2:g} 秒抖动）：命中率 {run.hit_rate:.1%}，"
                 f"TTFT p90 {run.ttft(90):.0f} ms"))

# %% [markdown] lang="en"
# ## TODO 4 · Fetch or recompute
#
# A block in host memory is not free: 64 MiB crosses the host link. Recomputing it is not free either, and
# its price depends on where it sits: its 512 tokens attend over every token before them. Fetch only when
# the transfer plus the prefill that is left beats recomputing.

# %% [markdown] lang="zh"
# ## TODO 4 · 取回还是重算
#
# 主机内存里的块不是免费的：64 MiB 要经过主机链路。重算也不是免费的，而且代价取决于块所在的位置：
# 它的 512 个 token 要对前面所有 token 做 attention。只有“传输 + 剩余的 prefill”比重算快时才取回。

# %% solution="fetch_or_recompute"

# %% check="s09.fetch_or_recompute"

# %% [markdown] lang="en"
# ### Predict, then run
# A 16-block prompt (8,192 tokens): 4 blocks on the GPU, the next 10 in host memory. Below what host-link
# bandwidth, in GB/s, is recomputing those 10 blocks faster than fetching them? (PCIe 5.0 x16 moves about
# 50 GB/s.) Write a number.

# %% [markdown] lang="zh"
# ### 先预测，再运行
# 一个 16 块（8,192 token）的提示词：4 个块在 GPU 上，接下来 10 个在主机内存里。主机链路带宽低于多少
# GB/s 时，重算这 10 个块比取回更快？（PCIe 5.0 x16 大约 50 GB/s。）写一个数。

# %%
# your prediction: a number of GB/s
# zh: 你的预测：多少 GB/s
my_guess_2 = None

# %%
with demo("s09.fetch_or_recompute"):
    # the bandwidth where fetching starts to win, by bisection on a log scale
    # zh: 取回开始胜出的带宽，在对数尺度上二分查找
    def crossover(request, gpu, host):
        lo, hi = 0.01, 1000.0
        for _ in range(50):
            mid = (lo * hi) ** 0.5
            lo, hi = (lo, mid) if fetch_or_recompute(request, gpu, host, FLEET_COST.with_bandwidth(mid)) else (mid, hi)
        return hi

    from workbook.fleet import Request
    prompt16 = Request(0, 0.0, 16 * 512, 1, tuple(range(16)))
    reveal(my_guess_2, crossover(prompt16, 4, 10), why("s09.my_guess_2"), relative=0.5)
    prompt64 = Request(0, 0.0, 64 * 512, 1, tuple(range(64)))
    for gpu in (0, 24, 56):
        print(tr(f"64-block prompt, 4 host blocks after {gpu} GPU blocks: fetching wins above "
                 f"{crossover(prompt64, gpu, 4):.1f} GB/s",
                 f"64 块的提示词，{gpu} 个 GPU 块之后的 4 个主机内存块：带宽高于 {crossover(prompt64, gpu, 4):.1f} GB/s 时取回更快"))

# %% [markdown] lang="en"
# ### The tier in the fleet
# Eight replicas with your router, host links of 1, 4 and 25 GB/s, always fetching against your rule.

# %% [markdown] lang="zh"
# ### 集群里的主机内存层
# 8 个副本、用你的路由器，主机链路分别为 1、4、25 GB/s，比较“总是取回”和你的规则。

# %%
with demo("s09.apply", "s09.overlap_scores", "s09.choose_replica", "s09.fetch_or_recompute"):
    for gbps in (1.0, 4.0, 25.0):
        cost = FLEET_COST.with_bandwidth(gbps)
        always = simulate(requests, PrefixRouter(), 8, cost=cost, **FLEET)
        ruled = simulate(requests, PrefixRouter(), 8, cost=cost, fetch=fetch_or_recompute, **FLEET)
        fetched = sum(s.fetched for s in ruled.served) / max(1, sum(s.host_hit > 0 for s in ruled.served))
        print(tr(f"{gbps:4.0f} GB/s: TTFT p90 always fetching {always.ttft(90):6.0f} ms, your rule "
                 f"{ruled.ttft(90):6.0f} ms (fetches {fetched:.0%} of host hits)",
                 f"{gbps:4.0f} GB/s：TTFT p90 总是取回 {always.ttft(90):6.0f} ms，你的规则 {ruled.ttft(90):6.0f} ms"
                 f"（取回了 {fetched:.0%} 的主机内存命中）"))

# %% [markdown] lang="en"
# ## The decision
# Rendered from the runs above (simulated time: it holds in every run). And a check that a recorded list
# of choices replays to the same numbers, which is how the course compares an external router's choices.

# %% [markdown] lang="zh"
# ## 结论
# 由上面的运行结果生成（时间是模拟的：每次运行都成立）。另外验证一份记录下来的选择能回放出相同的数字——
# 课程正是这样比较外部路由器的选择的。

# %% given="decision"

# %%
with demo("s09.apply", "s09.overlap_scores", "s09.choose_replica"):
    print(decision(runs))
    best8 = min(at8, key=lambda run: run.ttft(90))
    again = replay_assignment(requests, best8.assignment, 8, **FLEET)
    print(tr(f"replayed {best8.policy}'s choices: TTFT p90 {again.ttft(90):.0f} ms (recorded {best8.ttft(90):.0f} ms)",
             f"回放 {best8.policy} 的选择：TTFT p90 {again.ttft(90):.0f} ms（原来 {best8.ttft(90):.0f} ms）"))

# %% quiz="questions"

# %% scoring="table"

# %% [markdown] lang="en"
# ## Recap
#
# You built the router's side of a fleet: a KV-event index that stays right when events come late, twice
# or out of order; overlap scores per tier that read only the request's blocks; a router that predicts
# TTFT from queue, prefill and transfer; and a per-request rule for fetching from a host tier.
#
# **The one invariant:** for each block on each replica, the newest event (largest sequence number) decides,
# whatever order events arrive in.
#
# **The numbers** (first 3,000 conversation requests, 1,000 GPU + 8,000 host blocks per replica, the same
# in every run): at 8 replicas your router reuses 29.1% of prompt tokens with a TTFT p90 of 762 ms, against
# 11.2% and 901 ms for least-loaded and 10.7% and 1,353 ms for round-robin. Affinity reuses more (32.0%) but
# its busiest replica does 1.30x the mean work and its p90 is 882 ms; the approximate index, blind to the host
# tier, reuses 19.3%. Without a tier, an approximate record four times the GPU cache believed too much for
# 5.5% of the first thousand requests and 15.6% of the last. Events a second late, jittered and duplicated
# change nothing; a minute late, the event-fed index reuses 24.3% instead of 29.1%. Fetching 10 host blocks after 4 GPU blocks stops
# paying below about 5.3 GB/s; 4 blocks after 56 GPU blocks still pay down to 2.6 GB/s.
#
# ## Further reading
# - Qin et al., *Mooncake: Trading More Storage for Less Computation*, USENIX FAST 2025: KV-cache-centric
#   scheduling by prefix and queue, with a DRAM pool behind the GPUs; the traces of this course.
# - llm-d documentation, *KV-cache aware routing*: the approximate (router-side) and precise (KV-event fed)
#   prefix scorers side by side.
# - SGLang documentation, *SGLang Router* (cache-aware load balancing): a radix tree per worker and a switch
#   to load balancing when workers grow uneven.
# - NVIDIA Dynamo documentation, *KV Cache Routing*: overlap scores from KV events weighed against load.
# - LMCache documentation: CPU and disk tiers behind the GPU, and when a transfer beats a recompute.

# %% [markdown] lang="zh"
# ## 回顾
#
# 你实现了集群中路由器的一侧：事件迟到、重复、乱序时仍然正确的 KV 事件索引；只读取请求自身块的分层重叠
# 打分；按排队、prefill 和传输预测 TTFT 的路由器；以及逐个请求决定是否从主机内存层取回的规则。
#
# **最重要的不变量：** 对每个副本上的每个块，最新的事件（序号最大的）说了算，不管事件以什么顺序到达。
#
# **测到的数字**（conversation trace 前 3,000 个请求，每个副本 1,000 个 GPU 块 + 8,000 个主机内存块，每次运行都
# 相同）：8 个副本时，你的路由器复用了 29.1% 的提示词 token，TTFT p90 为 762 ms；最少负载路由是 11.2% 和 901 ms，
# 轮询是 10.7% 和 1,353 ms。亲和路由复用得更多（32.0%），但最忙的副本工作量是平均值的 1.30 倍，p90 为 882 ms；
# 看不到主机内存层的近似索引只复用了 19.3%。没有主机内存层时，记录大小为 GPU 缓存四倍的近似索引，在前一千个
# 请求里有 5.5% 高估了持有量，最后一千个里升到 15.6%。事件迟到一秒、有抖动、有重复，结果完全不变；迟到一分钟时，
# 事件驱动的索引复用率从 29.1% 降到 24.3%。在 4 个 GPU 块之后取回 10 个主机内存块，带宽低于约
# 5.3 GB/s 就不划算；而在 56 个 GPU 块之后的 4 个块，低到 2.6 GB/s 仍然划算。
#
# ## 延伸阅读
# - Qin 等，*Mooncake: Trading More Storage for Less Computation*，USENIX FAST 2025：以 KV 缓存为中心、按前缀和
#   队列调度，并在 GPU 后面放一个 DRAM 池；本课程的 trace 就来自这里。
# - llm-d 文档，*KV-cache aware routing*：近似（路由器侧）和精确（KV 事件驱动）两种前缀打分器的对照。
# - SGLang 文档，*SGLang Router*（缓存感知的负载均衡）：每个 worker 一棵基数树，worker 负载不均时切换到负载均衡。
# - NVIDIA Dynamo 文档，*KV Cache Routing*：由 KV 事件得到的重叠分数与负载的权衡。
# - LMCache 文档：GPU 后面的 CPU 和磁盘层，以及传输什么时候比重算快。
