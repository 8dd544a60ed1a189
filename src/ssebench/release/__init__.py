"""A release's own images and chart: the Helm chart's service images (services.py:
`ssebench images build-services`, the proxy's among them) and the chart published with
them to a registry (chart.py: `ssebench images publish-chart`). Apart from
ssebench.images, which the proxy builds on: this package builds on both."""
