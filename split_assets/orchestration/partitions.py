"""One dynamic partition per diagnosis fingerprint: signals of different judges never mix.
Each workspace has its own partitions definition (``Names.partitions``)."""

from dagster import DynamicPartitionsDefinition

from split_assets.orchestration.names import Names


def partitions_of(names: Names) -> DynamicPartitionsDefinition:
    return DynamicPartitionsDefinition(name=names.partitions)
