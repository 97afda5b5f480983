{#-- dbt run-operation sized_timeline --args '{relation: schema.table}'
     Lists the table's instants: time, action, state, files added / removed, rows, bytes. --#}
{% macro sized_timeline(relation) %}
  {%- set rel = sized_resolve_relation(relation) -%}
  {%- set table = adapter.sized_timeline(rel) -%}
  {%- if execute -%}
    {{ print('Timeline of ' ~ rel.schema ~ '.' ~ rel.identifier ~ ' (' ~ (table.rows | length) ~ ' instants)') }}
    {%- do table.print_table(max_rows=none, max_columns=none) -%}
  {%- endif -%}
  {{ return(table) }}
{% endmacro %}

{#-- dbt run-operation sized_rollback --args '{relation: schema.table}'
     Restores the table to its state before its last completed commit. --#}
{% macro sized_rollback(relation) %}
  {%- set rel = sized_resolve_relation(relation) -%}
  {%- set undone = adapter.sized_rollback(rel) -%}
  {{ print('Rolled back ' ~ rel.schema ~ '.' ~ rel.identifier ~ ' to before commit ' ~ undone) }}
  {{ return(undone) }}
{% endmacro %}

{#-- dbt run-operation sized_recover --args '{relation: schema.table}'
     After a crash, roll back the unfinished write now (the next write would do it first). --#}
{% macro sized_recover(relation) %}
  {%- set rel = sized_resolve_relation(relation) -%}
  {%- set n = adapter.sized_recover(rel) -%}
  {{ print('Recovered ' ~ rel.schema ~ '.' ~ rel.identifier ~ ': ' ~ n ~ ' unfinished instant(s) rolled back') }}
  {{ return(n) }}
{% endmacro %}

{#-- dbt run-operation sized_repair --args '{relation: schema.table}'
     After files of the table were deleted or changed outside its commits (writes refuse to
     go on): records the table as it is now, as a new instant that lists the rows lost. --#}
{% macro sized_repair(relation) %}
  {%- set rel = sized_resolve_relation(relation) -%}
  {%- set message = adapter.sized_repair(rel) -%}
  {{ print(rel.schema ~ '.' ~ rel.identifier ~ ': ' ~ message) }}
  {{ return(message) }}
{% endmacro %}
