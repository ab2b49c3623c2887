"""Grid cells computed by a Dask cluster's workers (:mod:`nteval.cluster` holds the session)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..cluster import RETRIES, SEARCH_LOCK, distributed_module, require_path, result_of, session, share, worker_address, workers
from ..formats.trec import read_qrels, read_topics
from .cells import evaluate_cell, read_cell, read_exclusions, store_cell


def _cell_task(task, key: str, topics: dict[str, str], qrels: dict, held: dict | None) -> dict[str, Any]:
    require_path(task.index)
    with SEARCH_LOCK:
        cell = evaluate_cell(task, key, topics, qrels, held)
    cell["worker"] = worker_address()
    return cell


def grid_cells(scheduler: str, todo: list, bar) -> int:
    """Compute grid cells (``(Task, key)`` pairs) on the cluster; the client stores each cell as it
    arrives (atomically, never over a stored one). Returns the number of workers."""
    with session(scheduler, sorted({t.index for t, _ in todo})) as client:
        distributed = distributed_module()
        shared: dict[str, Any] = {}

        def data(path: str | None, reader) -> Any:
            if path is None:
                return None
            if path not in shared:
                shared[path] = share(client, reader(Path(path)), Path(path).name)
            return shared[path]

        futures = {}
        for task, key in todo:
            fut = client.submit(_cell_task, task, key, data(task.topics, read_topics), data(task.qrels, read_qrels),
                                data(task.exclude, read_exclusions), key=f"nteval-cell-{key}", retries=RETRIES)
            futures[fut] = (task, key)
        for fut in distributed.as_completed(list(futures), loop=client.loop):
            task, key = futures.pop(fut)
            cell = result_of(fut, f"grid cell {task.protocol} {task.system.name}")
            if read_cell(Path(task.path), key) is None:  # stored cells are never rewritten
                store_cell(task, cell)
            bar.set_postfix_str(f"{cell['protocol']} {cell['worker']}", refresh=False)
            bar.update(1)
        return workers(client)
