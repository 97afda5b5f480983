{#-- dbt run-operation demo_summary: the files of the demo's tables side by side, dbt-spark's
     own incremental first. Small: below the sized models' small-file limit (25 KB for their
     32 KB target). --#}
{% macro demo_summary(tables=['events_dbt_spark', 'events_incremental', 'events_range', 'events_exact', 'events_upsert'],
                      small='25KB', target_size='32KB') %}
  {%- if execute -%}
    {{ print('') }}
    {{ print('table                     partitions    files   small files   files per partition') }}
    {%- for name in tables -%}
      {%- set rel = api.Relation.create(schema=target.schema, identifier=name, type='table') -%}
      {%- set layout = adapter.sized_layout(rel, small, target_size) -%}
      {%- set parts = layout['partitions'].rows | length -%}
      {%- set files = layout['partitions'].columns['files'].values() | sum -%}
      {%- set smalls = layout['partitions'].columns['small_files'].values() | sum -%}
      {{ print('%-24s %11d %8d %13d %21.1f' | format(name, parts, files, smalls, files / (parts or 1))) }}
    {%- endfor -%}
    {{ print('(small: below ' ~ small ~ '; the sized models target ' ~ target_size ~ ' files)') }}
  {%- endif -%}
{% endmacro %}
