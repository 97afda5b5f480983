{#-- dbt run-operation sized_timeline --args '{relation: schema.table}'
     Lists the table's instants: time, action, state, files added / removed, rows, bytes. --#}
{% macro sized_timeline(relation) %}
  {%- set rel = sized_resolve_relation(relation) -%}
  {%- set table = adapter.sized_timeline(rel) -%}
  {%- if execute -%}
    {{ print('Timeline of ' ~ rel.schema ~ '.' ~ rel.identifier ~ ' (' ~ adapter.sized_count_of(table.rows | length, 'instant') ~ ')') }}
    {%- do table.print_table(max_rows=none, max_columns=none) -%}
  {%- endif -%}
  {{ return(table) }}
{% endmacro %}
