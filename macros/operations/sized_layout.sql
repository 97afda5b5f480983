{#-- dbt run-operation sized_layout --args '{relation: schema.table}'
     Prints per partition: files, rows, bytes, min / median / max file size, small files;
     and per file the min / max of the cluster columns (given as cluster_by, or those of the
     table's last clustering), to show how well the layout prunes. --#}
{% macro sized_layout(relation, small_file_limit=none, target_file_size=none, cluster_by=none) %}
  {{ return(adapter.dispatch('sized_layout')(relation, small_file_limit, target_file_size, cluster_by)) }}
{% endmacro %}

{% macro default__sized_layout(relation, small_file_limit, target_file_size, cluster_by) %}
  {%- set rel = sized_resolve_relation(relation) -%}
  {%- set layout = adapter.sized_layout(rel, small_file_limit, target_file_size, cluster_by) -%}
  {%- if execute -%}
    {%- set table = layout['partitions'] -%}
    {{ print('Layout of ' ~ rel.schema ~ '.' ~ rel.identifier ~ ' (' ~ adapter.sized_count_of(table.rows | length, 'partition') ~ '; ' ~ layout['limits'] ~ ')') }}
    {%- do table.print_table(max_rows=none, max_columns=none, max_column_width=60) -%}
    {%- if layout['files'] is not none -%}
      {{ print('Files and the range of their cluster columns') }}
      {%- do layout['files'].print_table(max_rows=none, max_columns=none, max_column_width=40) -%}
    {%- endif -%}
  {%- endif -%}
  {{ return(layout) }}
{% endmacro %}
