package schemaform

import "html/template"

// tmpl draws the fields. html/template escapes every name, label, help
// text and value: a schema or an answer holding markup shows it as text.
var tmpl = template.Must(template.New("form").Parse(`
{{- define "problems"}}{{range .}}<p class="sf-problem" role="alert">{{.}}</p>{{end}}{{end}}
{{- define "label"}}<span class="sf-label">{{.Label}}{{if .Member}} <code>{{.Member}}</code>{{end}}{{if .Required}}<span class="sf-required" title="required">*</span>{{end}}</span>{{end}}
{{- define "help"}}{{if .Help}}<span class="sf-help">{{.Help}}</span>{{end}}{{end}}
{{- define "field"}}
{{- if eq .Kind "object"}}
<fieldset class="sf-field sf-object{{if .Problems}} sf-invalid{{end}}" data-path="{{.Name}}">
{{- if .Label}}<legend>{{template "label" .}}</legend>{{end}}{{template "help" .}}{{template "problems" .Problems}}
{{- range .Members}}{{template "field" .}}{{end}}
</fieldset>
{{- else if eq .Kind "array"}}
<fieldset class="sf-field sf-array{{if .Problems}} sf-invalid{{end}}" data-path="{{.Name}}">
<legend>{{template "label" .}}</legend>{{template "help" .}}{{template "problems" .Problems}}
<ol class="sf-items">{{range .Items}}{{template "item" .}}{{end}}</ol>
<template class="sf-template">{{template "item" .Template}}</template>
<button type="button" class="sf-add" data-next="{{len .Items}}">Add</button>
</fieldset>
{{- else if or (eq .Kind "choice") (eq .Kind "multi")}}
<fieldset class="sf-field sf-choices{{if .Problems}} sf-invalid{{end}}" data-path="{{.Name}}">
<legend>{{template "label" .}}</legend>{{template "help" .}}
{{- if .Select}}
<select name="{{.Name}}" id="{{.ID}}"><option value="">—</option>{{range .Choices}}<option value="{{.Value}}"{{if .Checked}} selected{{end}}>{{.Label}}</option>{{end}}</select>
{{- else}}{{$f := .}}{{range $i, $c := .Choices}}
<label class="sf-choice"><input type="{{if eq $f.Kind "multi"}}checkbox{{else}}radio{{end}}" name="{{$f.Name}}" value="{{$c.Value}}"{{if $c.Checked}} checked{{end}}> {{$c.Label}}</label>
{{- end}}{{end}}
{{template "problems" .Problems}}
</fieldset>
{{- else}}
<div class="sf-field sf-{{.Kind}}{{if .Problems}} sf-invalid{{end}}" data-path="{{.Name}}">
{{- if eq .Kind "checkbox"}}
<input type="hidden" name="sf-bool" value="{{.Name}}"><label for="{{.ID}}"><input type="checkbox" id="{{.ID}}" name="{{.Name}}" value="true"{{if .Checked}} checked{{end}}> {{template "label" .}}</label>
{{- else}}
<label for="{{.ID}}">{{template "label" .}}</label>
{{- if eq .Kind "const"}}
<input type="hidden" name="{{.Name}}" value="{{(index .Choices 0).Value}}"><output id="{{.ID}}">{{.Value}}</output>
{{- else if eq .Kind "textarea"}}
<textarea id="{{.ID}}" name="{{.Name}}" rows="4">{{.Value}}</textarea>
{{- else if eq .Kind "json"}}
<textarea id="{{.ID}}" name="{{.Name}}" rows="6" class="sf-json" placeholder="JSON">{{.Value}}</textarea>
{{- else}}
<input type="{{.Input}}" id="{{.ID}}" name="{{.Name}}" value="{{.Value}}"{{if .Step}} step="{{.Step}}"{{end}}{{if .Min}} min="{{.Min}}"{{end}}{{if .Max}} max="{{.Max}}"{{end}}>
{{- end}}{{end}}
{{template "help" .}}{{template "problems" .Problems}}
</div>
{{- end}}
{{- end}}
{{- define "item"}}<li class="sf-item"><input type="hidden" name="sf-item" value="{{.Name}}">{{template "field" .}}<button type="button" class="sf-remove">Remove</button></li>{{end}}
{{- if .Problems}}<div class="sf-problems" role="alert">{{template "problems" .Problems}}</div>{{end}}
{{- template "field" .Root}}
`))

// Script adds and removes the rows of the form's arrays: a page that shows
// a form with arrays includes it once (it is plain JavaScript, no
// library). Without it the form still works, with the rows it was drawn
// with.
const Script = `document.addEventListener("click", function (e) {
  var t = e.target;
  if (t.classList.contains("sf-remove")) { t.closest(".sf-item").remove(); return; }
  if (!t.classList.contains("sf-add")) return;
  var set = t.closest(".sf-array"), tpl = set.querySelector(":scope > template.sf-template");
  var i = Number(t.dataset.next || 0); t.dataset.next = i + 1;
  var row = tpl.content.firstElementChild.cloneNode(true);
  row.querySelectorAll("[name],[id],[for],[value],[data-path]").forEach(function (el) {
    ["name", "id", "for", "value", "data-path"].forEach(function (a) {
      var v = el.getAttribute(a);
      if (v && v.indexOf("` + indexToken + `") >= 0) el.setAttribute(a, v.split("` + indexToken + `").join(String(i)));
    });
  });
  set.querySelector(":scope > .sf-items").appendChild(row);
});
`
