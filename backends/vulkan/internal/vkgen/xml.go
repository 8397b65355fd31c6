package main

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
)

// node is one element of the registry, with its text and child elements kept in document order
// (a struct member reads "const <type>T</type>* <name>n</name>[<enum>N</enum>]": the order of
// text and elements is the declaration).
type node struct {
	Name  string
	Attr  map[string]string
	Items []item // text and elements, in order
}

// item is either text or an element.
type item struct {
	Text string
	Elem *node
}

func parseXML(r io.Reader) (*node, error) {
	d := xml.NewDecoder(r)
	root := &node{Name: "#document"}
	stack := []*node{root}
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		top := stack[len(stack)-1]
		switch t := tok.(type) {
		case xml.StartElement:
			n := &node{Name: t.Name.Local, Attr: map[string]string{}}
			for _, a := range t.Attr {
				n.Attr[a.Name.Local] = a.Value
			}
			top.Items = append(top.Items, item{Elem: n})
			stack = append(stack, n)
		case xml.EndElement:
			if len(stack) == 1 {
				return nil, fmt.Errorf("unbalanced end element %s", t.Name.Local)
			}
			stack = stack[:len(stack)-1]
		case xml.CharData:
			top.Items = append(top.Items, item{Text: string(t)})
		}
	}
	if len(stack) != 1 {
		return nil, fmt.Errorf("unclosed element %s", stack[len(stack)-1].Name)
	}
	return root, nil
}

// children returns the child elements named name ("" for all).
func (n *node) children(name string) []*node {
	var out []*node
	for _, it := range n.Items {
		if it.Elem != nil && (name == "" || it.Elem.Name == name) {
			out = append(out, it.Elem)
		}
	}
	return out
}

// child returns the first child element named name, or nil.
func (n *node) child(name string) *node {
	for _, it := range n.Items {
		if it.Elem != nil && it.Elem.Name == name {
			return it.Elem
		}
	}
	return nil
}

// text returns all the text under n, elements included, in order.
func (n *node) text() string {
	var b strings.Builder
	for _, it := range n.Items {
		if it.Elem != nil {
			b.WriteString(it.Elem.text())
		} else {
			b.WriteString(it.Text)
		}
	}
	return b.String()
}

// forVulkan reports whether the element applies to the Vulkan API (an api attribute, where
// present, is a comma-separated list such as "vulkan,vulkansc").
func (n *node) forVulkan() bool {
	api, ok := n.Attr["api"]
	if !ok {
		return true
	}
	for _, a := range strings.Split(api, ",") {
		if a == "vulkan" {
			return true
		}
	}
	return false
}
