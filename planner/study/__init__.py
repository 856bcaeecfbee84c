"""What-if studies: one instance planned under many changes, on any executor, resumable.

``sweep`` runs a grid or a list of change sets (``planner.study.run``), ``pareto_front`` marks the
scenarios that meet their requirements and no other such beats on every figure
(``planner.study.pareto``), and
``planner.study.figures`` draws them. Importing this package loads no solver, no plotting
library and no Dask.
"""

from __future__ import annotations

from planner.study.folder import Opened as Opened
from planner.study.folder import open_study as open_study
from planner.study.folder import write_study as write_study
from planner.study.pareto import DEFAULT_MAXIMISE as DEFAULT_MAXIMISE
from planner.study.pareto import DEFAULT_MINIMISE as DEFAULT_MINIMISE
from planner.study.pareto import pareto_front as pareto_front
from planner.study.pareto import ranked_mask as ranked_mask
from planner.study.pareto import ranking_note as ranking_note
from planner.study.pareto import sizes_vary as sizes_vary
from planner.study.pareto import with_pareto as with_pareto
from planner.study.pareto import with_per_gpu as with_per_gpu
from planner.study.run import SerialExecutor as SerialExecutor
from planner.study.run import StudyProgress as StudyProgress
from planner.study.run import StudyRun as StudyRun
from planner.study.run import process_pool as process_pool
from planner.study.run import run_sweep as run_sweep
from planner.study.run import study_of as study_of
from planner.study.run import sweep as sweep
from planner.study.run import worker_count as worker_count
from planner.study.scenarios import TIMING_COLUMNS as TIMING_COLUMNS
from planner.study.scenarios import Scenario as Scenario
from planner.study.scenarios import Study as Study
