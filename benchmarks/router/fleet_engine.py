"""A mock worker's engine that is a replica of stage 9's fleet simulator (``workbook.fleet``): the same
GPU cache and host tier (``Replica``), the same cost model (``CostModel``: the prefill of what it
does not hold plus the transfer of what its host tier gives), the same rule of fetching whatever the
host tier holds (``simulate``'s default). So the time a mock worker holds a request is the time the
simulator would give it on that replica after the same requests, and the router's load signal follows
what the scoring later measures.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from benchmarks.router.mock_worker import Job
from workbook.fleet import FLEET_COST, CostModel, Replica, Request


@dataclass
class ReplicaEngine:
    """Invariants: ``requests`` maps every job's rid to its trace request; ``replica`` holds what this
    worker served, in the order it served it (the order requests reached it)."""

    replica: Replica
    requests: Mapping[str, Request]
    cost: CostModel = FLEET_COST

    def serve(self, job: Job) -> tuple[float, int]:
        request = self.requests[job.rid]
        gpu, host = self.replica.held(request.blocks)
        cached = self.cost.cached_tokens(request, gpu + host)
        ms = self.cost.prefill_ms(request.input_tokens - cached, cached) + self.cost.transfer_ms(host)
        self.replica.admit(request.blocks, 0.0)  # the events are for an index; the mock worker emits none
        return ms, cached
