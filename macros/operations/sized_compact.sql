{#-- dbt run-operation sized_compact --args '{relation: schema.table}'
     Bin-packs, per partition, the files below the compaction limit (default: the table's
     small_file_limit) into files of target_file_size, rows in their file order (no sort),
     and splits files above 1.8 x target; one replacecommit in the timeline (sized_rollback
     undoes it). Optional: partitions (values, or {column: value} mappings), max_groups,
     max_bytes, small_file_limit, target_file_size; schedule_only: true stores the plan for
     a later sized_compact or sized_cluster. --#}
{% macro sized_compact(relation, partitions=none, schedule_only=false, target_file_size=none,
                       small_file_limit=none, max_groups=none, max_bytes=none) %}
  {%- set rel = sized_resolve_relation(relation) -%}
  {%- set message = adapter.sized_compact(rel, partitions, schedule_only, {
        'target_file_size': target_file_size,
        'small_file_limit': small_file_limit,
        'max_groups': max_groups,
        'max_bytes': max_bytes}) -%}
  {{ print(rel.schema ~ '.' ~ rel.identifier ~ ': ' ~ message) }}
  {{ return(message) }}
{% endmacro %}

{#-- As a post-hook: post_hook="{{ sized_compact_hook() }}" compacts the partitions of the
     model's table after every run. --#}
{% macro sized_compact_hook(partitions=none) %}
  {%- if execute -%}
    {%- set message = adapter.sized_compact(this, partitions, false, {
          'target_file_size': config.get('target_file_size'),
          'small_file_limit': config.get('small_file_limit')}) -%}
    {{ log(this ~ ': ' ~ message, info=true) }}
  {%- endif -%}
  {{ return('') }}
{% endmacro %}
