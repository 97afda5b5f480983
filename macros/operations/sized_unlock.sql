{#-- dbt run-operation sized_unlock --args '{relation: schema.table}'
     Shows who holds the table's writer lock (host, pid, operation, age, lease). With
     force: true it breaks the lock, for a writer known to be gone (its host was lost): the
     next write rolls back the holder's unfinished instant. --#}
{% macro sized_unlock(relation, force=false) %}
  {%- set rel = sized_resolve_relation(relation) -%}
  {%- set result = adapter.sized_unlock(rel, force) -%}
  {{ print(result.message) }}
  {{ return(result.message) }}
{% endmacro %}
