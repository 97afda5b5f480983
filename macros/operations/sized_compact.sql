{#-- dbt run-operation sized_compact --args '{relation: schema.table}'
     Bin-packs, per partition, the files below the compaction limit (default: the table's
     small_file_limit) into files of target_file_size, rows in their file order (no sort),
     and splits files above 1.8 x target; one replacecommit in the timeline (sized_rollback
     undoes it). Optional: partitions (values, or {column: value} mappings), where (a SQL
     condition on the partition columns, evaluated against each partition's values),
     max_groups, max_bytes, small_file_limit, target_file_size; partial_progress: true
     commits every partial_progress_groups groups (default 10), so an interrupted run keeps
     what it finished; schedule_only: true stores the plan for a later sized_compact or
     sized_cluster. lock_timeout: how long it waits for a load's writer lock to plan and
     to commit (default 10m); it rewrites without the lock, so loads go on meanwhile. --#}
{% macro sized_compact(relation, partitions=none, schedule_only=false, target_file_size=none,
                       small_file_limit=none, max_groups=none, max_bytes=none, where=none,
                       partial_progress=none, partial_progress_groups=none, lock_timeout=none) %}
  {%- set rel = sized_resolve_relation(relation) -%}
  {%- set message = adapter.sized_compact(rel, partitions, schedule_only, {
        'target_file_size': target_file_size,
        'small_file_limit': small_file_limit,
        'max_groups': max_groups,
        'max_bytes': max_bytes,
        'where': where,
        'partial_progress': partial_progress,
        'partial_progress_groups': partial_progress_groups,
        'lock_timeout': lock_timeout}) -%}
  {{ print(rel.schema ~ '.' ~ rel.identifier ~ ': ' ~ message) }}
  {{ return(message) }}
{% endmacro %}

{#-- As a post-hook: post_hook="{{ sized_compact_hook() }}" compacts the partitions of the
     model's table after every run;
     post_hook="{{ sized_compact_hook(where='event_date >= current_date() - 7') }}" only
     the last week's. --#}
{% macro sized_compact_hook(partitions=none, where=none, partial_progress=none,
                            partial_progress_groups=none) %}
  {%- if execute -%}
    {%- set message = adapter.sized_compact(this, partitions, false, {
          'target_file_size': config.get('target_file_size'),
          'small_file_limit': config.get('small_file_limit'),
          'where': where,
          'partial_progress': partial_progress,
          'partial_progress_groups': partial_progress_groups,
          'lock_timeout': config.get('lock_timeout')}) -%}
    {{ log(this ~ ': ' ~ message, info=true) }}
  {%- endif -%}
  {{ return('') }}
{% endmacro %}
