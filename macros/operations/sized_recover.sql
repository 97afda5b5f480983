{#-- dbt run-operation sized_recover --args '{relation: schema.table}'
     After a crash, roll back the unfinished write now (the next write would do it first). --#}
{% macro sized_recover(relation) %}
  {%- set rel = sized_resolve_relation(relation) -%}
  {%- set result = adapter.sized_recover(rel) -%}
  {{ print(result.message) }}
  {{ return(result.instants | length) }}
{% endmacro %}
