"""Export stage: a scored run in the layouts of other projects' scorers (docs/exports.md).

``_source`` reads a run's scored rollouts with their points; ``_fdb`` builds Full-Duplex-Bench
v1's sample files and ``_turnbench`` TurnBench's predictions and gold, both as pure functions;
``_stage`` writes them (``pmc export fdb``, ``pmc export turnbench``).
"""

from pmc.export._fdb import (
    FDB_SAMPLE_RATE,
    TASKS,
    FdbSample,
    FdbTask,
    interrupt_json,
    mix_input,
    output_json,
    pause_json,
    task_for,
    turn_taking_json,
)
from pmc.export._source import EXPORTED_STATUSES, Rollout, RunRollouts, run_rollouts
from pmc.export._stage import (
    GOLD_FILE,
    INDEX_FILE,
    PREDICTIONS_DIR,
    Exported,
    export_fdb,
    export_turnbench,
)
from pmc.export._turnbench import (
    EXPORTED_KINDS,
    SPEAKERS,
    TAU_MAX_S,
    TAU_PRE_S,
    GoldConversation,
    conv_s,
    eot_times_conv_s,
    gold_file,
    gold_for,
    prediction,
    predictions_file,
)

__all__ = [
    "EXPORTED_KINDS",
    "EXPORTED_STATUSES",
    "FDB_SAMPLE_RATE",
    "GOLD_FILE",
    "INDEX_FILE",
    "PREDICTIONS_DIR",
    "SPEAKERS",
    "TASKS",
    "TAU_MAX_S",
    "TAU_PRE_S",
    "Exported",
    "FdbSample",
    "FdbTask",
    "GoldConversation",
    "Rollout",
    "RunRollouts",
    "conv_s",
    "eot_times_conv_s",
    "export_fdb",
    "export_turnbench",
    "gold_file",
    "gold_for",
    "interrupt_json",
    "mix_input",
    "output_json",
    "pause_json",
    "prediction",
    "predictions_file",
    "run_rollouts",
    "task_for",
    "turn_taking_json",
]
