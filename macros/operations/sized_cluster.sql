{#-- dbt run-operation sized_cluster --args '{relation: schema.table, cluster_by: [a, b], strategy: zorder}'
     Schedules a clustering plan (stored in the table's timeline) and executes every pending
     plan; with schedule_only: true it only stores the plan, and a later sized_cluster (with or
     without cluster_by) executes it. Optional: target_file_size, cluster_small_file_limit,
     cluster_max_bytes_per_group, cluster_max_groups, lock_timeout (how long it waits for a
     load's writer lock to plan and to commit; default 10m). --#}
{% macro sized_cluster(relation, cluster_by=none, strategy='linear', schedule_only=false,
                       target_file_size=none, cluster_small_file_limit=none,
                       cluster_max_bytes_per_group=none, cluster_max_groups=none,
                       lock_timeout=none) %}
  {%- set rel = sized_resolve_relation(relation) -%}
  {%- set message = adapter.sized_cluster(rel, cluster_by, strategy, schedule_only, {
        'target_file_size': target_file_size,
        'cluster_small_file_limit': cluster_small_file_limit,
        'cluster_max_bytes_per_group': cluster_max_bytes_per_group,
        'cluster_max_groups': cluster_max_groups,
        'lock_timeout': lock_timeout}) -%}
  {{ print(rel.schema ~ '.' ~ rel.identifier ~ ': ' ~ message) }}
  {{ return(message) }}
{% endmacro %}

{#-- As a post-hook: post_hook="{{ sized_cluster_hook() }}" clusters the model's table by its
     cluster_by / cluster_strategy config after every run. --#}
{% macro sized_cluster_hook(cluster_by=none, strategy=none, schedule_only=false) %}
  {%- if execute -%}
    {%- set cols = cluster_by or config.get('cluster_by') -%}
    {%- set how = strategy or config.get('cluster_strategy') or 'linear' -%}
    {%- set message = adapter.sized_cluster(this, cols, how, schedule_only, {
          'target_file_size': config.get('target_file_size'),
          'cluster_small_file_limit': config.get('cluster_small_file_limit'),
          'lock_timeout': config.get('lock_timeout')}) -%}
    {{ log(this ~ ': ' ~ message, info=true) }}
  {%- endif -%}
  {{ return('') }}
{% endmacro %}
