{#-- dbt run-operation sized_compact --args '{relation: schema.table}'
     Bin-packs, per partition, the files below the compaction limit (default: the table's
     small_file_limit) into files of target_file_size, rows in their file order (no sort),
     and splits files above 1.8 x target; one replacecommit in the timeline (sized_rollback
     undoes it), or with partial_progress one every few groups. It rewrites without the
     writer lock, so loads go on meanwhile. --#}
{#-- Its arguments besides relation are declared once, in python_adapter/core/config_keys.py
     (OPERATIONS; docs/reference/operation-arguments.md): the adapter checks them, naming one
     it does not take, before Spark starts. --#}
{% macro sized_compact(relation) %}
  {%- set rel = sized_resolve_relation(relation) -%}
  {%- set message = adapter.sized_compact(rel, kwargs) -%}
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
    {%- set message = adapter.sized_compact(this, {
          'partitions': partitions,
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
