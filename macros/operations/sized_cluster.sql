{#-- dbt run-operation sized_cluster --args '{relation: schema.table, cluster_by: [a, b], strategy: zorder}'
     Schedules a clustering plan (stored in the table's timeline) and executes every pending
     plan; with schedule_only: true it only stores the plan, and a later sized_cluster (with or
     without cluster_by) executes it. --#}
{#-- Its arguments besides relation are declared once, in python_adapter/core/config_keys.py
     (OPERATIONS; docs/reference/operation-arguments.md): the adapter checks them, naming one
     it does not take, before Spark starts. --#}
{% macro sized_cluster(relation) %}
  {%- set rel = sized_resolve_relation(relation) -%}
  {%- set message = adapter.sized_cluster(rel, kwargs) -%}
  {{ print(rel.schema ~ '.' ~ rel.identifier ~ ': ' ~ message) }}
  {{ return(message) }}
{% endmacro %}

{#-- As a post-hook: post_hook="{{ sized_cluster_hook() }}" clusters the model's table by its
     cluster_by / cluster_strategy config after every run. --#}
{% macro sized_cluster_hook(cluster_by=none, strategy=none, schedule_only=false) %}
  {%- if execute -%}
    {%- set cols = cluster_by or config.get('cluster_by') -%}
    {%- set how = strategy or config.get('cluster_strategy') or 'linear' -%}
    {%- set message = adapter.sized_cluster(this, {
          'cluster_by': cols, 'strategy': how, 'schedule_only': schedule_only,
          'target_file_size': config.get('target_file_size'),
          'cluster_small_file_limit': config.get('cluster_small_file_limit'),
          'lock_timeout': config.get('lock_timeout')}) -%}
    {{ log(this ~ ': ' ~ message, info=true) }}
  {%- endif -%}
  {{ return('') }}
{% endmacro %}
