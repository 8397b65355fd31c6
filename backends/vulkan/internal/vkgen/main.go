// Command vkgen writes the Go mirrors of the Vulkan structs, constants and commands that
// backends/vulkan's device runtime uses, read from the Vulkan registry (vk.xml).
//
// It writes two files: vk_generated.go (struct mirrors, handle and enum types, constants, the
// VkResult name table and purego call wrappers with their loaders) and vk_generated_test.go
// (the list of every mirrored struct and constant, which the layout test checks against the C
// headers with a C compiler). Run it through go generate in backends/vulkan:
//
//	go run ./internal/vkgen -registry /usr/share/vulkan/registry/vk.xml
//
// Without -registry it reads $VK_REGISTRY, else /usr/share/vulkan/registry/vk.xml. The
// structs, enum groups and commands it mirrors are listed in this file; the structs their
// fields embed are added automatically.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

// DefaultRegistry is where libvulkan-dev installs vk.xml.
const DefaultRegistry = "/usr/share/vulkan/registry/vk.xml"

func main() {
	regPath := flag.String("registry", DefaultRegistry, "path of vk.xml")
	dir := flag.String("dir", ".", "directory to write vk_generated.go and vk_generated_test.go into")
	flag.Parse()
	if p := os.Getenv("VK_REGISTRY"); p != "" && !isFlagSet("registry") {
		*regPath = p
	}
	src, test, err := generate(*regPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "vkgen:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(filepath.Join(*dir, "vk_generated.go"), src, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "vkgen:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(filepath.Join(*dir, "vk_generated_test.go"), test, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "vkgen:", err)
		os.Exit(1)
	}
}

func isFlagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
}

// structs are the structs mirrored (the structs their fields embed are added automatically).
var structs = []string{
	"VkApplicationInfo",
	"VkInstanceCreateInfo",
	"VkExtensionProperties",
	"VkPhysicalDeviceProperties",
	"VkPhysicalDeviceProperties2",
	"VkPhysicalDeviceVulkan11Properties",
	"VkPhysicalDeviceVulkan12Properties",
	"VkPhysicalDeviceVulkan13Properties",
	"VkPhysicalDeviceSubgroupProperties",
	"VkPhysicalDeviceSubgroupSizeControlProperties",
	"VkPhysicalDeviceFeatures",
	"VkPhysicalDeviceFeatures2",
	"VkPhysicalDeviceVulkan11Features",
	"VkPhysicalDeviceVulkan12Features",
	"VkPhysicalDeviceVulkan13Features",
	"VkPhysicalDeviceSubgroupSizeControlFeatures",
	"VkPhysicalDevice16BitStorageFeatures",
	"VkPhysicalDevice8BitStorageFeatures",
	"VkPhysicalDeviceShaderFloat16Int8Features",
	"VkPhysicalDeviceShaderIntegerDotProductFeatures",
	"VkPhysicalDeviceShaderAtomicFloatFeaturesEXT",
	"VkPhysicalDeviceDriverProperties",
	"VkPhysicalDeviceMemoryProperties",
	"VkQueueFamilyProperties",
	"VkDeviceQueueCreateInfo",
	"VkDeviceCreateInfo",
	"VkBufferCreateInfo",
	"VkMemoryRequirements",
	"VkMemoryAllocateInfo",
	"VkDescriptorSetLayoutBinding",
	"VkDescriptorSetLayoutCreateInfo",
	"VkDescriptorPoolSize",
	"VkDescriptorPoolCreateInfo",
	"VkDescriptorSetAllocateInfo",
	"VkDescriptorBufferInfo",
	"VkWriteDescriptorSet",
	"VkPushConstantRange",
	"VkPipelineLayoutCreateInfo",
	"VkShaderModuleCreateInfo",
	"VkPipelineCacheCreateInfo",
	"VkPipelineCreationFeedback",
	"VkPipelineCreationFeedbackCreateInfo",
	"VkPipelineShaderStageCreateInfo",
	"VkPipelineShaderStageRequiredSubgroupSizeCreateInfo",
	"VkComputePipelineCreateInfo",
	"VkCommandPoolCreateInfo",
	"VkCommandBufferAllocateInfo",
	"VkCommandBufferBeginInfo",
	"VkMemoryBarrier",
	"VkBufferCopy",
	"VkSubmitInfo",
	"VkFenceCreateInfo",
	"VkQueryPoolCreateInfo",
	// Presentation (wsi*.go).
	"VkSurfaceCapabilitiesKHR",
	"VkSurfaceFormatKHR",
	"VkSwapchainCreateInfoKHR",
	"VkPresentInfoKHR",
	"VkSemaphoreCreateInfo",
	"VkImageMemoryBarrier",
	"VkBufferMemoryBarrier",
	"VkBufferImageCopy",
}

// enumGroups are emitted whole (core values, plus extension values for VkResult).
var enumGroups = []string{
	"VkResult",
	"VkPhysicalDeviceType",
	"VkQueueFlagBits",
	"VkMemoryPropertyFlagBits",
	"VkMemoryHeapFlagBits",
	"VkBufferUsageFlagBits",
	"VkSharingMode",
	"VkDescriptorType",
	"VkShaderStageFlagBits",
	"VkSubgroupFeatureFlagBits",
	"VkPipelineShaderStageCreateFlagBits",
	"VkPipelineBindPoint",
	"VkCommandPoolCreateFlagBits",
	"VkCommandBufferLevel",
	"VkCommandBufferUsageFlagBits",
	"VkAccessFlagBits",
	"VkPipelineStageFlagBits",
	"VkQueryType",
	"VkQueryResultFlagBits",
	"VkDescriptorPoolCreateFlagBits",
	"VkFenceCreateFlagBits",
	"VkPipelineCreationFeedbackFlagBits",
	"VkPipelineCacheHeaderVersion",
	"VkFormat",
	"VkImageLayout",
	"VkImageUsageFlagBits",
	"VkImageAspectFlagBits",
	"VkColorSpaceKHR",
	"VkPresentModeKHR",
	"VkSurfaceTransformFlagBitsKHR",
	"VkCompositeAlphaFlagBitsKHR",
}

// extraConstants are single constants emitted besides the groups and the struct types.
var extraConstants = []string{
	"VK_WHOLE_SIZE",
	"VK_QUEUE_FAMILY_IGNORED",
	"VK_TRUE",
	"VK_FALSE",
	"VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR",
	"VK_IMAGE_LAYOUT_PRESENT_SRC_KHR",
}

// funcTable is one table of function pointers and how its entries are loaded.
type funcTable struct {
	name     string // Go type name
	doc      string
	commands []string
}

var funcTables = []funcTable{
	{"vkLibraryFuncs", "are exported by the loader library itself (dlsym).", []string{
		"vkGetInstanceProcAddr",
	}},
	{"vkGlobalFuncs", "are loaded with vkGetInstanceProcAddr(NULL, name).", []string{
		"vkEnumerateInstanceVersion",
		"vkEnumerateInstanceExtensionProperties",
		"vkCreateInstance",
	}},
	{"vkInstanceFuncs", "are loaded with vkGetInstanceProcAddr(instance, name).", []string{
		"vkDestroyInstance",
		"vkEnumeratePhysicalDevices",
		"vkGetPhysicalDeviceProperties",
		"vkGetPhysicalDeviceProperties2",
		"vkGetPhysicalDeviceFeatures2",
		"vkGetPhysicalDeviceQueueFamilyProperties",
		"vkGetPhysicalDeviceMemoryProperties",
		"vkEnumerateDeviceExtensionProperties",
		"vkCreateDevice",
		"vkGetDeviceProcAddr",
	}},
	{"vkDeviceFuncs", "are loaded with vkGetDeviceProcAddr(device, name).", []string{
		"vkDestroyDevice",
		"vkGetDeviceQueue",
		"vkDeviceWaitIdle",
		"vkCreateBuffer",
		"vkDestroyBuffer",
		"vkGetBufferMemoryRequirements",
		"vkAllocateMemory",
		"vkFreeMemory",
		"vkBindBufferMemory",
		"vkMapMemory",
		"vkUnmapMemory",
		"vkCreateShaderModule",
		"vkDestroyShaderModule",
		"vkCreateDescriptorSetLayout",
		"vkDestroyDescriptorSetLayout",
		"vkCreateDescriptorPool",
		"vkDestroyDescriptorPool",
		"vkResetDescriptorPool",
		"vkAllocateDescriptorSets",
		"vkUpdateDescriptorSets",
		"vkCreatePipelineLayout",
		"vkDestroyPipelineLayout",
		"vkCreatePipelineCache",
		"vkGetPipelineCacheData",
		"vkDestroyPipelineCache",
		"vkCreateComputePipelines",
		"vkDestroyPipeline",
		"vkCreateCommandPool",
		"vkDestroyCommandPool",
		"vkResetCommandPool",
		"vkAllocateCommandBuffers",
		"vkBeginCommandBuffer",
		"vkEndCommandBuffer",
		"vkCmdBindPipeline",
		"vkCmdBindDescriptorSets",
		"vkCmdPushConstants",
		"vkCmdDispatch",
		"vkCmdPipelineBarrier",
		"vkCmdCopyBuffer",
		"vkCmdWriteTimestamp",
		"vkCmdResetQueryPool",
		"vkCreateQueryPool",
		"vkDestroyQueryPool",
		"vkGetQueryPoolResults",
		"vkCreateFence",
		"vkDestroyFence",
		"vkResetFences",
		"vkWaitForFences",
		"vkQueueSubmit",
		"vkQueueWaitIdle",
	}},
	{"vkSurfaceFuncs", "present to a surface (VK_KHR_surface, loaded with vkGetInstanceProcAddr(instance, name) only\n// where the instance enabled it).", []string{
		"vkDestroySurfaceKHR",
		"vkGetPhysicalDeviceSurfaceSupportKHR",
		"vkGetPhysicalDeviceSurfaceCapabilitiesKHR",
		"vkGetPhysicalDeviceSurfaceFormatsKHR",
		"vkGetPhysicalDeviceSurfacePresentModesKHR",
	}},
	{"vkSwapchainFuncs", "present images (VK_KHR_swapchain and the image copies, loaded with\n// vkGetDeviceProcAddr(device, name) only where the device enabled the extension).", []string{
		"vkCreateSwapchainKHR",
		"vkDestroySwapchainKHR",
		"vkGetSwapchainImagesKHR",
		"vkAcquireNextImageKHR",
		"vkQueuePresentKHR",
		"vkCreateSemaphore",
		"vkDestroySemaphore",
		"vkCmdCopyBufferToImage",
		"vkCmdCopyImageToBuffer",
	}},
}
