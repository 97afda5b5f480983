{#-- dbt run-operation sized_recover --args '{relation: schema.table}'
     After a crash, roll back the unfinished write now (the next write would do it first). --#}
{% macro sized_recover(relation) %}
  {%- set rel = sized_resolve_relation(relation) -%}
  {%- set n = adapter.sized_recover(rel) -%}
  {{ print('Recovered ' ~ rel.schema ~ '.' ~ rel.identifier ~ ': ' ~ adapter.sized_count_of(n, 'unfinished instant') ~ ' rolled back') }}
  {{ return(n) }}
{% endmacro %}
