"""The machinery the course runs on, apart from the queue library and the lessons: the one
place that finds, starts, stops and cleans every server the course uses (`server`, with
`embedded`, `container` and `standin_image`; lesson 11's `broker`), the learner's own files
(`learner`) and copy of the lessons (`workcopy`), JupyterLab (`jupyter`), psql (`psql`) and
`pgq-teach clean` (`tidy`)."""
